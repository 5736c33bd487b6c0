"""The official OpenAI Python client (PyPI `openai`, sync and async) against a running
hark-llm: what a program written for OpenAI's API gets from Hark's offline model server.
Usage: python openai_python.py BASE_URL TOKEN MODEL. Prints one line per check ("ok NAME" or
"FAILED NAME: why") and exits 1 if any failed. Content is not judged (the model is tiny)."""

import asyncio
import sys

import openai
from openai import AsyncOpenAI, OpenAI

BASE, TOKEN, MODEL = sys.argv[1:4]
HELLO = [{"role": "user", "content": "Say hello."}]
failed = []


def check(name, fn):
    try:
        fn()
        print(f"ok {name}", flush=True)
    except Exception as e:  # every failure is reported, whatever it is
        failed.append(name)
        print(f"FAILED {name}: {type(e).__name__}: {e}", flush=True)


def expect(cond, why):
    if not cond:
        raise AssertionError(why)


client = OpenAI(base_url=BASE, api_key=TOKEN, max_retries=0, timeout=120)


def models():
    ids = [m.id for m in client.models.list()]
    expect(MODEL in ids, f"{MODEL} not in {ids}")


def plain():
    r = client.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=16)
    c = r.choices[0]
    expect(isinstance(c.message.content, str) and c.message.content, f"no text: {r}")
    expect(c.finish_reason in ("stop", "length"), c.finish_reason)
    expect(r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0, r.usage)


def streamed():
    chunks = list(
        client.chat.completions.create(
            model=MODEL, messages=HELLO, max_tokens=16, stream=True, stream_options={"include_usage": True}
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    expect(text, "no text streamed")
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    expect(finish and finish[-1] in ("stop", "length"), finish)
    expect(chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0, chunks[-1])


def accumulated():
    # The SDK's stream helper accumulates the chunks into a whole completion (and raises
    # LengthFinishReasonError for a reply the limit cut: room enough to finish).
    with client.chat.completions.stream(model=MODEL, messages=HELLO, max_tokens=400) as s:
        for _ in s:
            pass
        final = s.get_final_completion()
    expect(final.choices[0].message.content, f"no text: {final}")


def length():
    r = client.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=1)
    expect(r.choices[0].finish_reason == "length", r.choices[0].finish_reason)


def tool_history():
    messages = [
        {"role": "user", "content": "What time is it in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "14:05"},
    ]
    r = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=8)
    expect(r.choices[0].message.content is not None, r)


def image_refused():
    try:
        client.chat.completions.create(
            model=MODEL,
            max_tokens=4,
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is this?"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                    ],
                }
            ],
        )
    except openai.BadRequestError as e:
        expect(e.status_code == 400, e.status_code)
        return
    raise AssertionError("an image part was accepted")


def wrong_token():
    bad = OpenAI(base_url=BASE, api_key="not-the-token", max_retries=0)
    try:
        bad.models.list()
    except openai.AuthenticationError as e:
        expect(e.status_code == 401, e.status_code)
        return
    raise AssertionError("a wrong token was accepted")


def unknown_path():
    try:
        client.get("/no/such/path", cast_to=object)
    except openai.NotFoundError as e:
        expect(e.status_code == 404, e.status_code)
        return
    raise AssertionError("an unknown path answered")


def hang_up_frees_the_model():
    # A client that stops reading mid-stream and closes the connection: the server stops
    # generating, so the next request is answered (a deadline only catches a hang).
    s = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Count to one thousand."}], max_tokens=400, stream=True
    )
    next(iter(s))
    s.close()
    r = OpenAI(base_url=BASE, api_key=TOKEN, max_retries=0, timeout=120).chat.completions.create(
        model=MODEL, messages=HELLO, max_tokens=4
    )
    expect(r.choices[0].message.content is not None, r)


async def asynchronous():
    a = AsyncOpenAI(base_url=BASE, api_key=TOKEN, max_retries=0, timeout=120)
    r = await a.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=8)
    expect(r.choices[0].message.content, r)
    text = ""
    async for c in await a.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=8, stream=True):
        if c.choices:
            text += c.choices[0].delta.content or ""
    expect(text, "no text streamed")
    await a.close()


for name, fn in [
    ("python: the model list", models),
    ("python: a plain reply", plain),
    ("python: a streamed reply, with usage", streamed),
    ("python: the stream helper's final completion", accumulated),
    ('python: finish_reason "length"', length),
    ("python: a tool call and its result in the history", tool_history),
    ("python: an image part refused with 400", image_refused),
    ("python: a wrong token refused with 401", wrong_token),
    ("python: an unknown path answered 404", unknown_path),
    ("python: a client that hangs up frees the model", hang_up_frees_the_model),
    ("python async: a plain and a streamed reply", lambda: asyncio.run(asynchronous())),
]:
    check(name, fn)
sys.exit(1 if failed else 0)
