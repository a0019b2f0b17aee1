"""Ground-truth plans: each task as tool steps whose arguments are expressions over earlier steps.

A plan is the one source every offline behaviour is generated from (native one call at
a time, native in parallel, code, both). Arguments are Python expressions over the
names of earlier steps; the answer is an expression too. Nothing here is an expected
output: answers are computed from what the runtime returns.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Step:
    name: str
    tool: str
    arguments: dict[str, str]


@dataclass(frozen=True, slots=True)
class Plan:
    steps: tuple[Step, ...]
    answer: str


def s(name: str, tool: str, **arguments: str) -> Step:
    return Step(name, tool, arguments)


def decode_chain(prefix: str, hex_literal: str, shift: int, *, reverse: bool = True) -> list[Step]:
    steps = [s(f"{prefix}a", "convert_hex_to_ascii", hex_string=repr(hex_literal))]
    source = f"{prefix}a"
    if reverse:
        steps.append(s(f"{prefix}r", "reverse_string", string=source))
        source = f"{prefix}r"
    steps.append(s(f"{prefix}d", "caesar_decode", message=source, shift=str(shift)))
    return steps


PLANS: dict[str, Plan] = {
    "message_decoder/full_alien_message_decoding": Plan(
        tuple(decode_chain("m", "7a686b7a686d666d686b", 5)), "md"
    ),
    "message_decoder/shortest_caesar_decoded_message": Plan(
        (
            *decode_chain("a", "636261", 4),
            *decode_chain("b", "686766", 4),
            *decode_chain("c", "6365646362", 4),
            *decode_chain("d", "6867666865", 4),
            s("la", "string_length", string="ad"),
            s("lb", "string_length", string="bd"),
            s("lc", "string_length", string="cd"),
            s("ld", "string_length", string="dd"),
            s("low", "minimum_value", values="[la, lb, lc, ld]"),
        ),
        "int(low)",
    ),
    "message_decoder/specific_decoded_character": Plan(
        tuple(decode_chain("m", "576562546563686e6f6c6f6779", 7)), "md"
    ),
    "message_decoder/hex_caesar_combined_decoding": Plan(
        tuple(decode_chain("m", "4d4f5252", 2, reverse=False)), "md"
    ),
    "message_decoder/multi_step_decoding_challenge": Plan(
        tuple(decode_chain("m", "726f77746e6153794d", 3)), "md"
    ),
    "message_decoder/length_based_decoding_puzzle": Plan(
        (
            *decode_chain("a", "646566", 6, reverse=False),
            *decode_chain("b", "6a6b6c6d", 6, reverse=False),
            *decode_chain("c", "68696a6b6c", 6, reverse=False),
            s("la", "string_length", string="ad"),
            s("lb", "string_length", string="bd"),
            s("lc", "string_length", string="cd"),
        ),
        "[m for m, n in ((ad, la), (bd, lb), (cd, lc)) if n == 5][0]",
    ),
    "message_decoder/maximum_value_decoding": Plan(
        (
            *decode_chain("a", "313233", 4),
            *decode_chain("b", "343536", 4),
            *decode_chain("c", "373839", 4),
            s("top", "maximum_value", values="[int(ad), int(bd), int(cd)]"),
        ),
        "int(top)",
    ),
    "cryptobotanists_plant_dna_sequencer/find_most_common_nucleotide_and_transcribe": Plan(
        (
            s("counts", "count_nucleotides", dna_sequence="'AGCTAGCCGATGCA'"),
            s("best", "find_max_nucleotide", counts="counts"),
            s("rna", "transcribe_dna_to_mrna", dna_sequence="best[0] * 3"),
        ),
        "rna",
    ),
    "cryptobotanists_plant_dna_sequencer/validate_transcribe_translate": Plan(
        (s("valid", "is_valid_dna_sequence", dna_sequence="'AGCTTX'"),),
        "'Invalid DNA sequence' if not valid else None",
    ),
    "cryptobotanists_plant_dna_sequencer/reverse_transcribe_count_max_nucleotide": Plan(
        (
            s("dna", "reverse_transcribe_mrna_to_dna", mrna_sequence="'AUGCUUUUC'"),
            s("counts", "count_nucleotides", dna_sequence="dna"),
            s("best", "find_max_nucleotide", counts="counts"),
        ),
        "best[0]",
    ),
    "cryptobotanists_plant_dna_sequencer/transcribe_translate_amino_acid_length": Plan(
        (
            s("rna", "transcribe_dna_to_mrna", dna_sequence="'AGCTAGCGTA'"),
            s("protein", "translate_mrna_to_amino_acid", mrna_sequence="rna"),
        ),
        "len(protein)",
    ),
    "cryptobotanists_plant_dna_sequencer/reverse_transcribe_palindrome_check": Plan(
        (
            s("dna", "reverse_transcribe_mrna_to_dna", mrna_sequence="'AUGCGU'"),
            s("counts", "count_nucleotides", dna_sequence="dna"),
        ),
        "counts",
    ),
    "cryptobotanists_plant_dna_sequencer/validate_find_longest_valid_sequence": Plan(
        (
            s("v1", "is_valid_dna_sequence", dna_sequence="'AGCTAG'"),
            s("v2", "is_valid_dna_sequence", dna_sequence="'XYZABC'"),
            s("v3", "is_valid_dna_sequence", dna_sequence="'GTCAGT'"),
        ),
        "max([q for q, ok in (('AGCTAG', v1), ('XYZABC', v2), ('GTCAGT', v3)) if ok], key=len)",
    ),
    "cryptobotanists_plant_dna_sequencer/transcribe_translate_find_amino_acid": Plan(
        (
            s("rna", "transcribe_dna_to_mrna", dna_sequence="'AGCTAGCGTA'"),
            s("protein", "translate_mrna_to_amino_acid", mrna_sequence="rna"),
        ),
        "'Methionine' in protein",
    ),
    "cryptobotanists_plant_dna_sequencer/find_most_common_nucleotide_combined_sequence": Plan(
        (
            s("counts", "count_nucleotides", dna_sequence="''.join(['AGCT', 'CCGA', 'TTAG'])"),
            s("best", "find_max_nucleotide", counts="counts"),
        ),
        "best",
    ),
}


def trade(prefix: str, base: str, rate: str, tariff: str) -> list[Step]:
    """convert, tariff, final value: the three calls of one trade."""
    return [
        s(f"{prefix}p", "convert_currency", base_price=base, conversion_rate=rate),
        s(f"{prefix}t", "calculate_tariff", price=f"{prefix}p", tariff_rate=tariff),
        s(f"{prefix}v", "estimate_final_value", price=f"{prefix}p", tariff=f"{prefix}t"),
    ]


PLANS.update(
    {
        # The instruction says "a tariff of 7.5 units"; the expected output (and the two
        # reference calls) treat 7.5 as a rate in percent.
        "trade_calculator/estimate_final_value": Plan(
            (
                s("t", "calculate_tariff", price="150", tariff_rate="7.5"),
                s("v", "estimate_final_value", price="150", tariff="t"),
            ),
            "v",
        ),
        "trade_calculator/interstellar_trade_transaction": Plan(
            tuple(trade("a", "50 * 100", "1.5", "8")), "av"
        ),
        "trade_calculator/taxed_commodity_export": Plan(
            tuple(trade("a", "120 * 200", "2.0", "5")), "av"
        ),
        "trade_calculator/currency_fluctuation_hedging": Plan(
            (
                *trade("a", "250 * 500", "1.5", "8"),
                *trade("b", "250 * 500", "1.65", "8"),
                *trade("c", "250 * 500", "1.8", "8"),
                s("low", "find_minimum", values="[av, bv, cv]"),
            ),
            "low",
        ),
        "trade_calculator/variable_tariff_profit_maximization": Plan(
            (
                *trade("a", "300 * 400", "1.7", "6"),
                *trade("b", "300 * 350", "1.7", "4"),
                *trade("c", "300 * 450", "1.7", "7"),
                s("high", "find_maximum", values="[av, bv, cv]"),
            ),
            "high",
        ),
        "trade_calculator/seasonal_price_fluctuation_impact": Plan(
            (
                *trade("a", "200 * 200", "1.8", "7"),
                *trade("b", "250 * 200", "1.8", "7"),
                *trade("c", "180 * 200", "1.8", "7"),
            ),
            "[av, bv, cv]",
        ),
        "trade_calculator/best_trade_route_selection": Plan(
            (
                *trade("a", "500", "1.3", "7"),
                *trade("b", "500", "1.4", "9"),
                *trade("c", "500", "1.2", "4"),
                s("low", "find_minimum", values="[av, bv, cv]"),
            ),
            "low",
        ),
        "trade_calculator/most_profitable_conversion_rate": Plan(
            (
                *trade("a", "300 * 1000", "2.5", "10"),
                *trade("b", "300 * 1000", "2.3", "10"),
                *trade("c", "300 * 1000", "2.7", "10"),
                s("high", "find_maximum", values="[av, bv, cv]"),
            ),
            "high",
        ),
        "trade_calculator/bulk_trade_quantity_discount": Plan(
            tuple(trade("a", "2500 * 1500 * 0.95", "1.8", "12")), "av"
        ),
        "trade_calculator/comparative_profit_analysis": Plan(
            (
                *trade("a", "100 * 300", "1.6", "6"),
                *trade("b", "80 * 500", "1.8", "5"),
                s("high", "find_maximum", values="[av, bv]"),
            ),
            "high",
        ),
        "trade_calculator/fluctuating_conversion_rates_impact": Plan(
            (
                *trade("a", "200 * 100", "1.7", "7"),
                *trade("b", "200 * 150", "1.5", "7"),
                *trade("c", "200 * 200", "1.6", "7"),
            ),
            "[av, bv, cv]",
        ),
        "trade_calculator/optimal_trade_route_multiple_commodities": Plan(
            (
                *trade("a", "200 * 150", "1.7", "8"),
                *trade("b", "300 * 250", "1.5", "5"),
                *trade("c", "400 * 100", "2.0", "10"),
                s("high", "find_maximum", values="[av, bv, cv]"),
            ),
            "high",
        ),
        "trade_calculator/balancing_multiple_trade_offers": Plan(
            (*trade("a", "250 * 300", "1.6", "6"), *trade("b", "220 * 150", "1.5", "4")),
            "av - bv",
        ),
        "trade_calculator/dynamic_pricing_strategy": Plan(
            (
                *trade("a", "300 * 1.1 * 120", "1.8", "6"),
                *trade("b", "300 * 100", "1.8", "6"),
                *trade("c", "300 * 0.95 * 80", "1.8", "6"),
            ),
            "[av, bv, cv]",
        ),
        "trade_calculator/quantity_tariff_tradeoff": Plan(
            (
                *trade("a", "400 * 200", "1.7", "10"),
                *trade("b", "400 * 150", "1.7", "5"),
                s("high", "find_maximum", values="[av, bv]"),
            ),
            "high",
        ),
        "trade_calculator/optimizing_bulk_purchase_discounts": Plan(
            (
                *trade("a", "150 * 950", "1.6", "7"),
                *trade("b", "150 * 1050 * 0.95", "1.6", "7"),
                *trade("c", "180 * 950", "1.6", "7"),
                *trade("d", "180 * 1050 * 0.95", "1.6", "7"),
                s("high", "find_maximum", values="[av, bv, cv, dv]"),
            ),
            "high",
        ),
        "trade_calculator/long_term_vs_short_term_trade_decisions": Plan(
            (
                *trade("a", "200 * 600", "1.8", "5"),
                *trade("b", "200 * 1.1 * 600", "1.8 - 0.2", "5 + 2"),
            ),
            "[av, bv]",
        ),
    }
)

CHEAPEST = "min({0}, key=lambda o: o['{1}'])['{1}']"
FIRST = "{0}[0]['{1}']"
BEST_RATED = "max({0}, key=lambda o: o['rating'])['price_per_night']"
NO_POOL_CHEAPEST = (
    "min([o for o in {0} if 'pool' not in o['preferences']], key=lambda o: o['{1}'])['{1}']"
)


def leg(
    prefix: str,
    source: str,
    target: str,
    date: str,
    nights: int,
    hotel: str,
    prefs: tuple[str, ...] = (),
    flight: str = CHEAPEST,
) -> list[Step]:
    """One leg of a trip: a flight, hotels, and the leg's budget."""
    return [
        s(
            f"{prefix}f",
            "find_flights",
            from_location=repr(source),
            to_location=repr(target),
            date=repr(date),
        ),
        s(f"{prefix}h", "book_hotel", location=repr(target), preferences=repr(list(prefs))),
        s(
            f"{prefix}b",
            "budget_calculator",
            flight_price=flight.format(f"{prefix}f", "price"),
            hotel_price_per_night=hotel.format(f"{prefix}h", "price_per_night"),
            num_nights=str(nights),
        ),
    ]


def trip(*legs: list[Step]) -> Plan:
    steps = [step for one in legs for step in one]
    if len(legs) == 1:
        return Plan(tuple(steps), steps[-1].name)
    total = s("total", "sum_values", values="[" + ", ".join(one[-1].name for one in legs) + "]")
    return Plan((*steps, total), "total")


_T = "travel_itinerary_planning/"
PLANS.update(
    {
        _T + "plan_trip_to_0": trip(leg("a", "E", "A", "2023-12-25", 5, FIRST, ("wifi", "pool"))),
        _T + "cheapest_new_york_trip": trip(leg("a", "E", "B", "2023-11-10", 3, CHEAPEST)),
        _T + "luxury_tokyo_trip": trip(leg("a", "E", "C", "2023-10-05", 7, BEST_RATED)),
        _T + "budget_trip_to_paris": trip(leg("a", "E", "A", "2023-12-25", 4, CHEAPEST)),
        _T + "new_york_trip_with_specific_preferences": trip(
            leg(
                "a",
                "E",
                "B",
                "2023-11-10",
                3,
                NO_POOL_CHEAPEST,
                ("gym",),
            )
        ),
        _T + "london_business_trip": trip(leg("a", "E", "D", "2023-08-15", 4, CHEAPEST, ("wifi",))),
        _T + "last_minute_tokyo_trip": trip(leg("a", "E", "C", "2023-12-01", 3, CHEAPEST)),
        _T + "new_york_holiday_season": trip(
            leg("a", "E", "B", "2023-12-15", 7, CHEAPEST, ("gym", "pool"))
        ),
        _T + "multi_city_business_trip": trip(
            leg("a", "E", "B", "2023-11-10", 2, CHEAPEST, ("wifi",)),
            leg("b", "B", "C", "2023-11-13", 3, CHEAPEST, ("wifi",)),
        ),
        _T + "leisure_multi_city_trip": trip(
            leg("a", "E", "A", "2023-12-25", 3, CHEAPEST),
            leg("b", "A", "D", "2023-12-28", 2, CHEAPEST),
        ),
        _T + "three_city_european_tour": trip(
            leg("a", "E", "A", "2023-12-25", 3, CHEAPEST, ("wifi",)),
            leg("b", "A", "D", "2023-12-29", 4, CHEAPEST, ("wifi",)),
            leg("c", "D", "C", "2024-01-02", 3, CHEAPEST, ("wifi",)),
        ),
        _T + "adventure_trip": trip(
            leg("a", "E", "C", "2023-12-01", 2, CHEAPEST, ("pool",)),
            leg("b", "C", "B", "2023-12-03", 3, CHEAPEST),
            leg("c", "B", "D", "2023-12-06", 2, CHEAPEST, ("gym",)),
        ),
        _T + "cultural_exploration_tour": trip(
            leg("a", "E", "A", "2023-12-25", 4, CHEAPEST, ("wifi",)),
            leg("b", "A", "B", "2023-12-29", 2, CHEAPEST, ("wifi",)),
            leg("c", "B", "D", "2024-01-01", 3, BEST_RATED, ("wifi",)),
        ),
        _T + "leisure_and_business_combo": trip(
            leg("a", "E", "D", "2023-08-15", 3, CHEAPEST, ("wifi", "gym")),
            leg("b", "D", "A", "2023-08-18", 2, CHEAPEST, ("pool",)),
            leg("c", "A", "C", "2023-08-20", 2, CHEAPEST, ("wifi", "gym")),
        ),
        _T + "grand_tour_vacation": trip(
            leg("a", "E", "C", "2023-12-01", 2, BEST_RATED),
            leg("b", "C", "D", "2023-12-03", 3, BEST_RATED),
            leg("c", "D", "B", "2023-12-06", 2, BEST_RATED),
            leg("d", "B", "E", "2023-12-08", 3, BEST_RATED),
        ),
    }
)

__all__ = ["PLANS", "Plan", "Step"]


# web_browsing ----------------------------------------------------------------------------

_W = "web_browsing/"
PRICE = "float(re.search(r'Price: \\$([\\d.]+)', {}).group(1))"
CATEGORY = {
    "wand": "wand",
    "potion": "potion",
    "spellbook": "spellbook",
    "crystal ball": "crystal_ball",
}
DEPARTMENT = {
    "allison_hill": "engineering",
    "meredith_barnes": "engineering",
    "kimberly_dudley": "engineering",
    "henry_santiago": "marketing",
}
FIELD = {"email": "Email", "phone_number": "Phone", "expertise": "Expertise"}
SUPPORT = [
    "david_caldwell",
    "scott_brown",
    "thomas_ramos",
    "james_house",
    "jordan_york",
    "mike_allen",
]


def clicks(prefix: str, *urls: str) -> list[Step]:
    return [s(f"{prefix}{i}", "click_url", url=repr(url)) for i, url in enumerate(urls)]


def item_url(item: str) -> tuple[str, str]:
    words = item.lower()
    category = next(c for name, c in CATEGORY.items() if words.endswith(name))
    return f"/products/{category}", f"/products/{category}/{words.replace(' ', '_')}"


def visit_items(items: list[str]) -> tuple[list[Step], list[str]]:
    steps: list[Step] = [s("p", "click_url", url=repr("/products"))]
    pages = []
    for number, item in enumerate(items):
        category, url = item_url(item)
        steps += clicks(f"i{number}_", category, url)
        pages.append(f"i{number}_1")
        steps += [s(f"b{number}_{k}", "go_to_previous_page") for k in range(2)]
    return steps, pages


for _item in (
    "Legendary Wand",
    "Legendary Potion",
    "Legendary Spellbook",
    "Legendary Crystal Ball",
):
    _steps = [s("p", "click_url", url=repr("/products")), *clicks("c", *item_url(_item))]
    PLANS[_W + "price_of_" + _item.lower().replace(" ", "_")] = Plan(
        tuple(_steps), PRICE.format("c1")
    )

for _person, _department in DEPARTMENT.items():
    _path = clicks("c", "/team", f"/team/{_department}", f"/team/{_department}/{_person}")
    for _field, _label in FIELD.items():
        PLANS[f"{_W}{_field}_of_{_person}"] = Plan(
            tuple(_path), f"re.search(r'{_label}: (.+)', c2).group(1).strip()"
        )
    PLANS[f"{_W}department_of_{_person}"] = Plan(
        tuple(_path), "re.search(r'of (\\w[\\w ]*?) Department', c2).group(1)"
    )

for _number, _items in enumerate(
    (
        ["Legendary Wand", "Enchanted Potion", "Magical Spellbook"],
        ["Mystical Crystal Ball", "Rare Crystal Ball", "Magical Spellbook"],
        ["Ancient Wand", "Mystical Wand", "Enchanted Potion"],
        ["Mystical Crystal Ball", "Rare Crystal Ball", "Magical Spellbook", "Mystical Potion"],
    )
):
    _steps, _pages = visit_items(_items)
    PLANS[f"{_W}total_price_of_selected_items_{_number}"] = Plan(
        tuple(_steps), " + ".join(PRICE.format(p) for p in _pages)
    )

for _number, _items in enumerate(
    (
        ["Legendary Wand", "Enchanted Potion", "Magical Spellbook"],
        ["Mystical Crystal Ball", "Magical Spellbook"],
        ["Ancient Wand", "Enchanted Potion"],
        ["Ancient Crystal Ball", "Rare Wand"],
    )
):
    _steps, _pages = visit_items(_items)
    PLANS[f"{_W}total_price_of_selected_items_after_discount_{_number}"] = Plan(
        tuple(_steps), "(" + " + ".join(PRICE.format(p) for p in _pages) + ") * 0.9"
    )

PLANS[_W + "people_in_sales"] = Plan(
    tuple(clicks("c", "/team", "/team/sales")), "len(re.findall(r'\\[Clickable', c1))"
)
PLANS[_W + "people_in_customer_support"] = Plan(
    tuple(clicks("c", "/team", "/team/customer_support")), "len(re.findall(r'\\[Clickable', c1))"
)

_support_steps = clicks("c", "/team", "/team/customer_support")
for _k, _who in enumerate(SUPPORT):
    _support_steps += [
        s(f"m{_k}", "click_url", url=repr(f"/team/customer_support/{_who}")),
        s(f"back{_k}", "go_to_previous_page"),
    ]
_PEOPLE = "[" + ", ".join(f"m{k}" for k in range(len(SUPPORT))) + "]"
for _who, _phone in (
    ("thomas_ramos", "432-867-7360"),
    ("james_house", "+1-972-434-3098x05009"),
    ("jordan_york", "(719)639-9091x6998"),
    ("mike_allen", "310-579-9118x38425"),
):
    PLANS[f"{_W}match_phone_number_to_person_{_who}"] = Plan(
        tuple(_support_steps),
        f"[re.search(r'\\n(.+?) of ', p).group(1) for p in {_PEOPLE} if {_phone!r} in p][0]",
    )
