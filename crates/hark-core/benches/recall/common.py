"""Shared helpers: Hark's stopword list and query tokenizer, plus Porter stemming.

`match_expression` mirrors `match_expression` in crates/hark-core/src/store/memory.rs
(split on anything that is not alphanumeric or an apostrophe, trim apostrophes,
lowercase, drop a trailing "'s", delete remaining apostrophes, skip words shorter
than 2 characters, stopwords and repeats; quote each word; join with OR).
"""

STOPWORDS = (
    "a about am an and any are as at be but by can could did do does for from had has "
    "have he her hers him his how i if in is it its just know me mine my no not of on or "
    "our please remember she so tell that the their them then there they this to us was "
    "we were what whats when where which who why will with would you your"
).split()
STOPSET = frozenset(STOPWORDS)


def raw_words(text):
    """Words as Hark's match_expression sees them (before the length/stopword filter)."""
    out = []
    cur = []
    for ch in text + " ":
        if ch.isalnum() or ch == "'":
            cur.append(ch)
        else:
            if cur:
                out.append("".join(cur))
                cur = []
    words = []
    for raw in out:
        w = raw.strip("'").lower()
        if w.endswith("'s"):
            w = w[:-2]
        w = w.replace("'", "")
        if w:
            words.append(w)
    return words


def content_words(text, min_len=1):
    """Content words (stopwords removed). min_len=2 reproduces Hark exactly; the
    verification uses min_len=1, which is stricter."""
    return [w for w in raw_words(text) if len(w) >= min_len and w not in STOPSET]


def match_expression(text):
    words = []
    for w in content_words(text, min_len=2):
        if w not in words:
            words.append(w)
    if not words:
        return None
    return " OR ".join('"%s"' % w for w in words)


_STEMMERS = None


def stemmers():
    """Several Porter variants; a paraphrase must be stem-disjoint under all of them."""
    global _STEMMERS
    if _STEMMERS is None:
        from nltk.stem import PorterStemmer
        import snowballstemmer

        nl = PorterStemmer()
        orig = PorterStemmer(mode="ORIGINAL_ALGORITHM")
        sb = snowballstemmer.stemmer("porter")
        sb2 = snowballstemmer.stemmer("english")
        _STEMMERS = {
            "nltk-porter": nl.stem,
            "nltk-porter-original": orig.stem,
            "snowball-porter": sb.stemWord,
            "snowball-english(porter2)": sb2.stemWord,
        }
    return _STEMMERS


def stems(text, stem):
    return {stem(w) for w in content_words(text, min_len=1)}


def model_session(onnx_path, tokenizer_path):
    """A model as the eval scripts run it: its tokenizer (no padding, truncated at 256
    tokens) and a single-threaded ONNX Runtime session. Imported here, not at the top, so
    that the generator needs no onnxruntime."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(tokenizer_path)
    tok.no_padding()
    tok.enable_truncation(256)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return tok, ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
