"""Records notebooks/data/shop.cassette.jsonl from the stand-in server (notebooks/standin.py):
``python notebooks/record_cassette.py``. Re-record after changing the shop's tools, its
tasks, or anything else that changes what a request sends: replay refuses a request it
has not seen."""

from __future__ import annotations

from pathlib import Path

import anyio
from shop import TASKS, shop_tools
from standin import serving

from codeact import Cassette, CassetteModel, OpenAIChatModel, compare

HERE = Path(__file__).resolve().parent
CASSETTE = HERE / "data" / "shop.cassette.jsonl"
STYLES = ("native", "code")


async def record(base_url: str, path: Path) -> None:
    async with OpenAIChatModel(model="stand-in", base_url=base_url, api_key="none") as endpoint:
        model = CassetteModel(Cassette(path), endpoint, name="stand-in")
        comparison = await compare(TASKS, tools=shop_tools, model=model, styles=STYLES)
    failed = [r for r in comparison.records if not r.success]
    if failed:
        raise SystemExit(f"the stand-in failed {[(r.task, r.style) for r in failed]}")


if __name__ == "__main__":
    CASSETTE.unlink(missing_ok=True)  # a recording starts afresh
    with serving() as url:
        anyio.run(record, url, CASSETTE)
    print("wrote", CASSETTE)
