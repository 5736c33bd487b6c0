#!/usr/bin/env python3
"""Verify recall-set.json. Run with the venv python (needs nltk + snowballstemmer):

    venv/bin/python check_set.py

Checks structure, the paraphrase rule (no shared content stem under four Porter
variants, and no FTS5 porter match of the query against its target), that lexical
queries share a distinctive stem with their target, and that every target text is
unique. Exit status 1 on any violation.
"""
import collections
import json
import os
import sqlite3
import sys

from common import content_words, match_expression, stemmers, stems

HERE = os.path.dirname(os.path.abspath(__file__))
data = json.load(open(os.path.join(HERE, "recall-set.json"), encoding="utf-8"))
problems = []

# ---------- structure ----------
S = data["sessions"]
ids = [s["id"] for s in S]
if len(set(ids)) != len(ids):
    problems.append("duplicate session ids")
nmsg = 0
for s in S:
    m = s["messages"]
    nmsg += len(m)
    if not 6 <= len(m) <= 20:
        problems.append("%s has %d messages" % (s["id"], len(m)))
    for i, msg in enumerate(m):
        want = "user" if i % 2 == 0 else "assistant"
        if msg["role"] != want:
            problems.append("%s[%d] role %s" % (s["id"], i, msg["role"]))
byid = {s["id"]: s for s in S}
Q = data["queries"]
NA = data["no_answer"]
kinds = collections.Counter(q["kind"] for q in Q)
print("sessions %d  messages %d  queries %d (%s)  no_answer %d"
      % (len(S), nmsg, len(Q), ", ".join("%s %d" % kv for kv in sorted(kinds.items())), len(NA)))
if len(S) < 150 or nmsg < 2000 or len(Q) < 70 or len(NA) < 20:
    problems.append("size requirements not met")
targets = []
for q in Q:
    t = q["target"]
    msg = byid[t["session"]]["messages"][t["index"]]
    if msg["role"] != "user":
        problems.append("%s target is not a user message" % q["id"])
    targets.append(msg["text"])
    nw = len(msg["text"].split())
    if not 5 <= nw <= 30:
        problems.append("%s target has %d words" % (q["id"], nw))

uw = [len(m["text"].split()) for s in S for m in s["messages"] if m["role"] == "user"]
print("user message words: min %d, median %d, max %d; %.1f%% in 5..30"
      % (min(uw), sorted(uw)[len(uw) // 2], max(uw), 100.0 * sum(5 <= w <= 30 for w in uw) / len(uw)))

# ---------- every message into an FTS5 porter index (as Hark does) ----------
db = sqlite3.connect(":memory:")
db.execute("create virtual table m using fts5(text, sid unindexed, idx unindexed, tokenize='porter unicode61')")
all_texts = []
for s in S:
    for i, msg in enumerate(s["messages"]):
        db.execute("insert into m(text, sid, idx) values (?,?,?)", (msg["text"], s["id"], i))
        all_texts.append(msg["text"])
text_count = collections.Counter(all_texts)


def df(word):
    return db.execute("select count(*) from m where m match ?", ('"%s"' % word,)).fetchone()[0]


# ---------- target uniqueness ----------
for q, t in zip(Q, targets):
    if text_count[t] != 1:
        problems.append("%s target text occurs %d times" % (q["id"], text_count[t]))

# ---------- paraphrase rule ----------
ST = stemmers()
one = sqlite3.connect(":memory:")
one.execute("create virtual table t using fts5(x, tokenize='porter unicode61')")
viol = 0
for q, t in zip(Q, targets):
    if q["kind"] != "paraphrase":
        continue
    for name, st in ST.items():
        common = sorted(stems(q["text"], st) & stems(t, st))
        if common:
            viol += 1
            problems.append("PARAPHRASE VIOLATION %s [%s] %r vs %r share %s" % (q["id"], name, q["text"], t, common))
    one.execute("delete from t")
    one.execute("insert into t values (?)", (t,))
    expr = match_expression(q["text"])
    if expr and one.execute("select count(*) from t where t match ?", (expr,)).fetchone()[0]:
        viol += 1
        problems.append("PARAPHRASE VIOLATION %s: FTS5 porter matches the target" % q["id"])
print("paraphrase violations: %d (over %d queries x %d stemmers + FTS5)" % (viol, kinds["paraphrase"], len(ST)))

# ---------- lexical queries ----------
nl = ST["nltk-porter"]
print("\nlexical queries: shared stems (messages containing the word, FTS5)")
for q, t in zip(Q, targets):
    if q["kind"] != "lexical":
        continue
    qw = {nl(w): w for w in content_words(q["text"])}
    tw = {nl(w): w for w in content_words(t)}
    shared = [qw[k] for k in qw if k in tw]
    if not shared:
        problems.append("LEXICAL %s shares no stem with its target" % q["id"])
        continue
    dfs = [(w, df(w)) for w in shared]
    rarest = min(d for _w, d in dfs)
    flag = "" if rarest <= 12 else "   <-- no distinctive shared word"
    if rarest > 12:
        problems.append("LEXICAL %s: shared words are all common %s" % (q["id"], dfs))
    print("  %s %-45s %s%s" % (q["id"], q["text"], dfs, flag))

# ---------- rarest words of each target (how unique the fact is) ----------
print("\ntarget rarest words (df = messages containing the word)")
for q, t in zip(Q, targets):
    ws = []
    for w in content_words(t, min_len=2):
        if w not in [x for x, _ in ws]:
            ws.append((w, df(w)))
    ws.sort(key=lambda x: x[1])
    print("  %s %-70s %s" % (q["id"], t[:70], ws[:3]))

print("\nno-answer queries: FTS5 hits (messages matching any word)")
for n in NA:
    expr = match_expression(n["text"])
    c = db.execute("select count(*) from m where m match ?", (expr,)).fetchone()[0] if expr else 0
    print("  %s %-45s %d" % (n["id"], n["text"], c))

print()
if problems:
    print("PROBLEMS (%d):" % len(problems))
    for p in problems:
        print("  " + p)
    sys.exit(1)
print("OK: no problems found")
