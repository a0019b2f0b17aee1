"""An image a tool gives (natively, or to a script that returns it or wraps it) reaches the
model as the content block a native call gives, never as base64 text."""

from __future__ import annotations

import base64

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeact import (
    AudioBlock,
    ImageBlock,
    InProcessExecutor,
    Runtime,
    TextBlock,
    ToolCall,
    ToolRegistry,
    anthropic_results,
    openai_chat_results,
    openai_responses_results,
    tool,
)

PICTURE = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(64))).decode()
SOUND = base64.b64encode(b"RIFF" + bytes(32)).decode()


@tool
def snap() -> ImageBlock:
    """Take a picture."""
    return ImageBlock(data=PICTURE, mime_type="image/png")


@tool
def screen() -> dict[str, object]:
    """A screenshot as an MCP server sends one: content blocks in the value."""
    return {
        "content": [
            {"type": "text", "text": "the screen"},
            {"type": "image", "data": PICTURE, "mimeType": "image/png"},
        ]
    }


@tool
def listen() -> AudioBlock:
    """Record a sound."""
    return AudioBlock(data=SOUND, mime_type="audio/wav")


def run(code_or_name: str, mode: str = "code") -> object:
    registry = ToolRegistry()
    for made in (snap, screen, listen):
        registry.register(made)
    runtime = Runtime(registry, executor=InProcessExecutor())
    if mode == "native":
        call = ToolCall("c1", code_or_name, {})
    else:
        call = ToolCall("c1", "run_code", {"code": code_or_name})
    return anyio.run(lambda: runtime.execute(call, mode=mode))


def test_a_native_tool_returning_an_image_gives_an_image_block() -> None:
    result = run("snap", mode="native")
    assert [block.type for block in result.content] == ["text", "image"]
    assert result.content[1] == ImageBlock(data=PICTURE, mime_type="image/png")
    assert PICTURE not in result.text


@pytest.mark.parametrize(
    "script",
    [
        "snap()",
        "picture = snap()\n{'caption': 'a cat', 'picture': picture}",
        "shot = screen()\nshot['content'][1]",
        "[snap(), screen()]",
    ],
)
def test_an_image_a_script_returns_or_wraps_is_an_image_block(script: str) -> None:
    result = run(script)
    images = [block for block in result.content if isinstance(block, ImageBlock)]
    assert images
    assert all(block.data == PICTURE for block in images)
    assert PICTURE not in result.text  # the text names it in one line
    assert "[image image/png, 72 bytes]" in result.text
    assert result.value["result"] is not None  # programs keep the value, base64 and all


def test_audio_a_script_passes_through_is_an_audio_block_the_model_reads_as_one_line() -> None:
    result = run("sound = listen()\nprint('recorded')\nsound")
    assert [block.type for block in result.content] == ["text", "audio"]
    assert SOUND not in result.text
    assert "recorded" in result.text


def test_each_provider_gets_the_image_as_it_takes_one() -> None:
    result = run("snap()")
    anthropic = anthropic_results([result])["content"][0]["content"]
    assert {"type": "base64", "media_type": "image/png", "data": PICTURE} in [
        part.get("source") for part in anthropic
    ]
    responses = openai_responses_results([result])[0]["output"]
    assert f"data:image/png;base64,{PICTURE}" in [part.get("image_url") for part in responses]
    chat = openai_chat_results([result])[0]["content"]  # Chat Completions takes none: one line
    assert PICTURE not in chat
    assert "[image image/png" in chat


def test_a_value_without_media_renders_as_it_always_did() -> None:
    result = run("{'type': 'image', 'note': 'no data, so not an image'}")
    assert result.content == (
        TextBlock(text='Result: {"note":"no data, so not an image","type":"image"}'),
    )


@given(
    st.recursive(
        st.none() | st.integers() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3)
        ),
        max_leaves=12,
    )
)
def test_any_value_with_an_image_inside_keeps_every_image_and_no_base64(value: object) -> None:
    from codeact.contract._media import render_value

    wrapped = {
        "before": value,
        "picture": {"type": "image", "data": PICTURE, "mimeType": "image/png"},
        "after": [value],
    }
    rendered = render_value(wrapped)
    assert not isinstance(rendered, str)
    assert [b for b in rendered if isinstance(b, ImageBlock)] == [
        ImageBlock(data=PICTURE, mime_type="image/png")
    ]
    assert PICTURE not in rendered[0].text
