#!/usr/bin/env bash
# What a change in the recalled memories costs the offline model (issue 20, with rule 12's
# recall on): a conversation of eight earlier turns sent to `hark-llm`, first with the same
# recalled message, then with another, then the next turn with a third, in both of the
# places rule 12 allows, side by side in one run:
# - beside the system prompt (what every model got before, and cloud models still get):
#   the recall comes first, so when it changes the whole history after it is evaluated
#   again;
# - the offline model's place now: the facts beside the system prompt, the earlier
#   messages recalled in a system note just before the user's words, so a change costs
#   only the note and the words (and, at the next turn, the last turn, which the note
#   moved past).
# The printed times are each request's (one token asked for) and how many prompt tokens
# came from the cache. Release build, the default chat model, on this machine's cores.
# Usage: scripts/bench-recall-prefix.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
export HARK_MODELS_DIR="${HARK_MODELS_DIR:-$HOME/.cache/hark/models}"
scripts/fetch-models.sh qwen2.5-coder-1.5b >/dev/null
cargo build --release --locked -q -p hark-llm
exec python3 - "$CARGO_TARGET_DIR/release/hark-llm" "$HARK_MODELS_DIR/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" <<'PY'
import json, re, subprocess, sys, time, urllib.request

server = subprocess.Popen([sys.argv[1], "--model", sys.argv[2], "--port", "0", "--ctx", "4096"],
                          stdout=subprocess.PIPE, text=True)
try:
    port = int(re.search(r"127\.0\.0\.1:(\d+)", server.stdout.readline()).group(1))

    def ask(messages):
        body = json.dumps({"messages": messages, "max_tokens": 1, "temperature": 0}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", body,
                                     {"content-type": "application/json"})
        t = time.perf_counter()
        usage = json.load(urllib.request.urlopen(req))["usage"]
        return (time.perf_counter() - t) * 1000, usage

    system = "You are Hark, a helpful voice assistant. Answer briefly, in one or two spoken sentences."
    history = []
    for q, a in [("What is the capital of France?", "The capital of France is Paris."),
                 ("How many legs does a spider have?", "A spider has eight legs."),
                 ("Tell me a fun fact about octopuses.", "Octopuses have three hearts and blue blood."),
                 ("What's a good name for a grey cat?", "How about Smoky, Ash or Pebble?"),
                 ("How long should I boil an egg?", "About seven minutes for a firm yolk, five for a soft one."),
                 ("What's the weather like on Mars?", "Cold and dusty, around minus sixty degrees on average."),
                 ("Who wrote Pride and Prejudice?", "Jane Austen wrote it, in 1813."),
                 ("How far away is the moon?", "About three hundred and eighty-four thousand kilometres.")]:
        history += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    question = {"role": "user", "content": "Where am I travelling this week?"}
    answer = {"role": "assistant", "content": "You fly to Lisbon on Friday morning."}
    follow = {"role": "user", "content": "And where does my brother live now?"}
    fact = "- likes green tea"
    mark = "- On 2026-12-01 the user said: \"My brother Mark moved to Toronto last month.\""
    lisbon = "- On 2026-11-20 the user said: \"I fly to Lisbon on Friday morning.\""
    heading = "Things you remember about the user from earlier conversations:\n"
    beside = lambda earlier, turn: [{"role": "system", "content": system + "\n\n" + heading + fact + "\n" + earlier}] + history + turn
    def before_words(earlier, turn):
        note = {"role": "system", "content": heading + earlier}
        return [{"role": "system", "content": system + "\n\n" + heading + fact}] + history + turn[:-1] + [note, turn[-1]]
    print("eight earlier turns, then a question; qwen2.5-coder-1.5b in hark-llm")
    for place, build in (("beside the system prompt (before)", beside),
                         ("just before the words (the offline model now)", before_words)):
        print(place)
        for label, earlier, turn in (("first request", mark, [question]),
                                     ("the same recall", mark, [question]),
                                     ("another recall", lisbon, [question]),
                                     ("that one again", lisbon, [question]),
                                     ("the next turn", mark, [question, answer, follow])):
            ms, u = ask(build(earlier, turn))
            print("  %-16s %6.0f ms   %d prompt tokens, %d from the cache" % (
                label, ms, u["prompt_tokens"], u["prompt_tokens_details"]["cached_tokens"]))
finally:
    server.kill()
PY
