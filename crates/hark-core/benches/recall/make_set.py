#!/usr/bin/env python3
"""Generate recall-set.json deterministically (fixed seed; no set/dict-hash ordering).

    python3 make_set.py            # writes recall-set.json next to this script
"""
import json
import os
import random

import facts as F
import filler as B

SEED = 20250611
N_SESSIONS = 170
MIN_PAIRS, MAX_PAIRS = 3, 10          # 6..20 messages per session
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recall-set.json")


def num(n):
    return B.NUM_WORDS.get(n, str(n))


def fmt(x):
    s = ("%.1f" % x)
    return s[:-2] if s.endswith(".0") else s


class Gen:
    def __init__(self, rng):
        self.rng = rng
        self.used_users = []          # list for determinism; membership via dict
        self.used = {}
        self.pools = {}
        for name in ["COOKING", "SCIENCE", "HISTORY", "GEOGRAPHY", "CODING", "HEALTH_HOME",
                     "SPORTS_ANIMALS", "OPINION", "MATHS_FIXED"]:
            pool = list(getattr(B, name))
            rng.shuffle(pool)
            self.pools[name] = pool
        self.jokes = list(B.JOKES)
        rng.shuffle(self.jokes)

    # ---- helpers ----
    def fresh(self, make, tries=40):
        """Call make() until it yields a user text not used before."""
        for _ in range(tries):
            pair = make()
            if pair is None:
                continue
            if pair[0] not in self.used:
                self.used[pair[0]] = True
                return pair
        return None

    def fixed(self, name):
        pool = self.pools[name]
        while pool:
            pair = pool.pop()
            if pair[0] not in self.used:
                self.used[pair[0]] = True
                return pair
        return None

    # ---- slot generators ----
    def capital(self):
        r = self.rng
        c, cap = r.choice(B.CAPITALS)
        t = r.randrange(3)
        if t == 0:
            return ("What's the capital of %s?" % c, "The capital of %s is %s." % (c, cap))
        if t == 1:
            return ("Which city is the capital of %s?" % c, "%s." % cap)
        wrong = r.choice([x[1] for x in B.CAPITALS if x[1] != cap])
        return ("Is %s the capital of %s?" % (wrong, c), "No, the capital of %s is %s." % (c, cap))

    def arithmetic(self):
        r = self.rng
        t = r.randrange(7)
        if t == 0:
            a, b = r.randint(11, 99), r.randint(3, 49)
            return ("Quick one, what's %d times %d?" % (a, b), "%d times %d is %d." % (a, b, a * b))
        if t == 1:
            a, b = r.randint(100, 999), r.randint(100, 999)
            return ("What do %d and %d add up to?" % (a, b), "That's %d." % (a + b))
        if t == 2:
            b = r.randint(3, 25)
            q = r.randint(4, 60)
            return ("What's %d divided by %d?" % (b * q, b), "%d divided by %d is %d." % (b * q, b, q))
        if t == 3:
            p = r.choice([5, 10, 12, 15, 20, 25, 30, 40, 75])
            n = r.choice([40, 60, 80, 120, 150, 200, 240, 360, 500, 640, 1200])
            return ("What's %d percent of %d?" % (p, n), "%d percent of %d is %s." % (p, n, fmt(p * n / 100)))
        if t == 4:
            p = r.choice([10, 12, 15, 18, 20])
            bill = r.randint(18, 140)
            return ("What's a %d percent tip on a %d pound bill?" % (p, bill),
                    "That would be %.2f, so %.2f in total." % (bill * p / 100, bill * (1 + p / 100)))
        if t == 5:
            n = r.randint(4, 40)
            return ("What's the square root of %d?" % (n * n), "It's %d." % n)
        n = r.randint(101, 499)
        d = next((k for k in range(2, int(n ** 0.5) + 1) if n % k == 0), None)
        if d is None:
            return ("Is %d a prime number?" % n, "Yes, %d is prime." % n)
        return ("Is %d a prime number?" % n, "No, it's %d times %d." % (d, n // d))

    def convert(self):
        r = self.rng
        t = r.randrange(7)
        if t == 0:
            n = r.choice([3, 5, 8, 10, 13, 26, 50, 100, 120])
            return ("How many kilometres is %d miles?" % n, "%d miles is about %s kilometres." % (n, fmt(n * 1.609)))
        if t == 1:
            n = r.choice([2, 5, 10, 15, 25, 60, 75, 90])
            return ("What's %d kilos in pounds?" % n, "About %s pounds." % fmt(n * 2.2046))
        if t == 2:
            f = r.choice([32, 50, 68, 75, 86, 98, 100, 212, 350, 400])
            return ("What's %d Fahrenheit in Celsius?" % f, "%d degrees Fahrenheit is about %d Celsius." % (f, round((f - 32) * 5 / 9)))
        if t == 3:
            n = r.choice([10, 30, 45, 60, 100, 150])
            return ("How many inches is %d centimetres?" % n, "About %s inches." % fmt(n / 2.54))
        if t == 4:
            n = r.choice([1, 2, 4, 8, 12, 16])
            return ("How many grams is %d ounces?" % n, "Roughly %d grams." % round(n * 28.35))
        if t == 5:
            ft, inch = r.randint(4, 6), r.randint(0, 11)
            return ("How tall is %d foot %d in metres?" % (ft, inch), "About %.2f metres." % ((ft * 12 + inch) * 0.0254))
        n = r.choice([1, 2, 3, 5])
        return ("How many pints are in %d litres?" % n, "About %s UK pints." % fmt(n * 1.76))

    def weather(self):
        r = self.rng
        day = r.choice(B.WEATHER_DAYS)
        cond = r.choice(B.WEATHER_CONDS)
        hi = r.randint(-1, 29)
        wet = any(w in cond for w in ("rain", "shower", "drizzle", "thunder", "sleet"))
        t = r.randrange(7)
        if t == 0:
            return ("What's the weather like %s?" % day, "Expect %s %s, with a high of %d degrees." % (cond, day, hi))
        if t == 1:
            return ("Is it going to rain %s?" % day,
                    ("Yes, there's %s on the way." % cond) if wet else ("It looks dry, with %s." % cond))
        if t == 2:
            return ("Do I need a coat %s?" % day,
                    ("Yes, it'll only reach %d degrees." % hi) if hi < 14 else ("Probably not, it should get to %d degrees." % hi))
        if t == 3:
            return ("How cold will it get %s?" % day, "Down to about %d degrees." % (hi - r.randint(4, 9)))
        if t == 4:
            return ("Am I going to get wet %s?" % day,
                    ("Probably, there's %s about." % cond) if wet else "No, it should stay dry.")
        if t == 5:
            city = r.choice(B.WEATHER_CITIES)
            return ("What's the weather in %s %s?" % (city, day), "In %s %s: %s, around %d degrees." % (city, day, cond, hi))
        return ("Is it going to be windy %s?" % day, "Gusts of up to %d miles an hour are forecast." % r.randint(12, 45))

    def timer(self):
        r = self.rng
        n = r.choice([3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 45, 50, 60, 90])
        thing = r.choice(B.TIMER_THINGS)
        t = r.randrange(5)
        if t == 0:
            return ("Set a timer for %d minutes for the %s." % (n, thing), "Okay, %d minutes for the %s, starting now." % (n, thing))
        if t == 1:
            return ("Timer for %s minutes, please." % num(n), "%s minute timer started." % num(n).capitalize())
        if t == 2:
            return ("How long is left on the %s timer?" % thing, "%d minutes and %d seconds." % (r.randint(0, 20), r.randint(1, 59)))
        if t == 3:
            return ("Cancel the %s timer, please." % thing, "Timer cancelled.")
        return ("Add five more minutes to the %s timer." % thing, "Done, five minutes added.")

    def alarm(self):
        r = self.rng
        tm = r.choice(["six thirty", "seven", "quarter past six", "five forty-five", "eight", "half past seven",
                       "six", "ten to seven", "nine", "seven fifteen"])
        t = r.randrange(3)
        if t == 0:
            return ("Wake me up at %s tomorrow." % tm, "Alarm set for %s tomorrow morning." % tm)
        if t == 1:
            return ("Set an alarm for %s." % tm, "Done, your alarm is set for %s." % tm)
        return ("Move my alarm to %s." % tm, "Okay, it's now set for %s." % tm)

    def remind(self):
        r = self.rng
        task = r.choice(B.REMIND_TASKS)
        when = r.choice(B.REMIND_WHEN)
        told = task.replace("my ", "your ")
        return ("Remind me to %s %s." % (task, when), "Okay, I'll remind you to %s %s." % (told, when))

    def shopping(self):
        r = self.rng
        t = r.randrange(3)
        a, b = r.sample(B.SHOPPING, 2)
        if t == 0:
            return ("Add %s to the shopping list." % a, "Added %s." % a)
        if t == 1:
            return ("Put %s and %s on the shopping list." % (a, b), "Done, %s and %s are on the list." % (a, b))
        items = r.sample(B.SHOPPING, 4)
        return ("What's on the shopping list?", "%s, %s, %s and %s." % (items[0].capitalize(), items[1], items[2], items[3]))

    def clock(self):
        r = self.rng
        t = r.randrange(3)
        if t == 0:
            return ("What time is it at the moment?", "It's %d:%02d." % (r.randint(1, 12), r.randrange(0, 60, 5)))
        if t == 1:
            wd = r.choice(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"])
            mo = r.choice(["January", "February", "March", "April", "May", "June", "July", "August",
                           "September", "October", "November", "December"])
            d = r.randint(1, 28)
            suf = "th" if 10 <= d % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(d % 10, "th")
            return ("What's the date today, please?", "It's %s the %d%s of %s." % (wd, d, suf, mo))
        city, off = r.choice([("New York", -5), ("Tokyo", 9), ("Sydney", 10), ("Los Angeles", -8),
                              ("Dubai", 4), ("Delhi", 5.5), ("Singapore", 8)])
        return ("What time is it in %s?" % city, "It's %d:%02d in the %s there." % (r.randint(1, 12), r.randrange(0, 60, 5),
                                                                             r.choice(["morning", "afternoon", "evening"])))

    def music(self):
        r = self.rng
        t = r.randrange(9)
        song, artist = r.choice(B.SONGS)
        if t == 0:
            g = r.choice(B.GENRES)
            return ("Can you play some %s?" % g, "Here's a %s playlist." % g)
        if t == 1:
            m = r.choice(B.MOODS)
            return ("Can you play %s?" % m, "Here's a mix that should fit.")
        if t == 2:
            return ("Play %s by %s." % (song, artist), "Playing %s by %s." % (song, artist))
        if t == 3:
            return ("Can you put on %s?" % song, "Here's %s by %s." % (song, artist))
        if t == 4:
            return ("Who sang the song %s?" % song, "%s was by %s." % (song, artist))
        if t == 5:
            return ("What was that song just now?", "That was %s by %s." % (song, artist))
        return r.choice([("Turn it up a bit, please.", "Volume up."), ("A bit quieter, please, it's loud.", "Turning it down."),
                         ("Pause the music for a moment.", "Paused."), ("Skip this one, I don't like it.", "Skipping to the next track."),
                         ("Okay, resume the music now.", "Resuming."), ("Shuffle the playlist for me.", "Shuffle is on.")])

    def culture(self):
        r = self.rng
        t = r.randrange(3)
        if t == 0:
            b, a = r.choice(B.BOOKS)
            return r.choice([("Who wrote %s, do you know?" % b, "%s was written by %s." % (b, a)),
                             ("Who's the author of %s?" % b, "%s." % a)])
        if t == 1:
            f, d = r.choice(B.FILMS)
            return ("Who directed the film %s?" % f, "%s was directed by %s." % (f, d))
        s, a = r.choice(B.SONGS)
        return ("Who had the hit %s?" % s, "That was %s." % a)

    def define(self):
        r = self.rng
        w, d = r.choice(B.WORDS)
        t = r.randrange(3)
        if t == 0:
            return ("What does the word %s mean?" % w, "%s means %s." % (w.capitalize(), d))
        if t == 1:
            return ("Can you define the word %s?" % w, "%s: %s." % (w.capitalize(), d))
        return ("What's the meaning of the word %s?" % w, "It means %s." % d)

    def spell(self):
        w = self.rng.choice(B.SPELL)
        return ("How do you spell %s?" % w, "%s is spelled %s." % (w.capitalize(), ", ".join(w.upper())))

    def translate(self):
        r = self.rng
        keys = list(B.PHRASES.keys())
        p = r.choice(keys)
        lang = r.choice(["French", "Spanish", "German", "Italian"])
        tr = B.PHRASES[p][lang]
        if r.randrange(2):
            return ("How do you say %s in %s?" % (p, lang), "In %s, %s is '%s'." % (lang, p, tr))
        return ("What's the %s for %s?" % (lang, p), "'%s'." % tr.capitalize())

    def joke(self):
        if not self.jokes:
            return None
        return (self.rng.choice(B.JOKE_ASKS), self.jokes.pop())

    # ---- categories ----
    def category_pair(self, cat):
        r = self.rng
        table = {
            "cooking": [("fixed", "COOKING", 5), ("timer", None, 2), ("convert", None, 1), ("shopping", None, 1)],
            "science": [("fixed", "SCIENCE", 5), ("fixed", "MATHS_FIXED", 1), ("arithmetic", None, 1)],
            "trivia": [("fixed", "HISTORY", 3), ("fixed", "GEOGRAPHY", 2), ("capital", None, 3),
                       ("culture", None, 3), ("fixed", "SPORTS_ANIMALS", 3)],
            "coding": [("fixed", "CODING", 6), ("arithmetic", None, 1)],
            "home": [("fixed", "HEALTH_HOME", 4), ("remind", None, 3), ("shopping", None, 2),
                     ("alarm", None, 2), ("clock", None, 1)],
            "music": [("music", None, 5), ("culture", None, 1)],
            "language": [("define", None, 3), ("spell", None, 2), ("translate", None, 3)],
            "weather": [("weather", None, 4), ("clock", None, 1), ("alarm", None, 1)],
            "maths": [("arithmetic", None, 5), ("convert", None, 3), ("fixed", "MATHS_FIXED", 1)],
            "chat": [("fixed", "OPINION", 3), ("joke", None, 3), ("fixed", "SPORTS_ANIMALS", 1)],
        }
        opts = table[cat]
        for _ in range(10):
            kind, name, _w = r.choices(opts, weights=[o[2] for o in opts])[0]
            if kind == "fixed":
                pair = self.fixed(name)
            elif kind == "joke":
                pair = self.joke()
            else:
                pair = self.fresh(getattr(self, kind))
            if pair is not None:
                return kind, pair
        return "arithmetic", self.fresh(self.arithmetic)


CATEGORIES = ["cooking", "science", "trivia", "coding", "home", "music", "language", "weather", "maths", "chat"]


def lead_in(rng, text):
    li = rng.choice(F.LEADINS)
    if not li:
        return text
    first = text.split(" ", 1)[0]
    if first in ("My", "The", "We're", "We", "Our", "This", "Big", "Guess", "For", "By"):
        text = text[0].lower() + text[1:]
    return li + text


def build():
    rng = random.Random(SEED)
    gen = Gen(rng)
    for f in F.FACTS:
        gen.used[f["target"]] = True
        for u, _a in f["distractors"]:
            gen.used[u] = True

    sessions = [dict(id="s%03d" % (i + 1), n=rng.randint(MIN_PAIRS, MAX_PAIRS), fixed=[], facts=[])
                for i in range(N_SESSIONS)]

    # place targets: at most two per session
    order = list(range(len(F.FACTS)))
    rng.shuffle(order)
    for fi in order:
        while True:
            s = rng.choice(sessions)
            if len(s["facts"]) < 2:
                break
        s["facts"].append(fi)
        f = F.FACTS[fi]
        ack = rng.choice(F.ACKS[f["mood"]])
        s["fixed"].append(("target", fi, (lead_in(rng, f["target"]), ack)))

    # place distractors in sessions that do not hold that fact's target
    for fi, f in enumerate(F.FACTS):
        for pair in f["distractors"]:
            while True:
                s = rng.choice(sessions)
                if fi not in s["facts"] and len(s["fixed"]) < MAX_PAIRS - 2:
                    break
            s["fixed"].append(("distractor", fi, pair))

    out_sessions = []
    targets = {}
    for s in sessions:
        n = max(s["n"], len(s["fixed"]) + 1)
        opener = rng.random() < 0.45
        closer = rng.random() < 0.4
        body_n = max(0, n - len(s["fixed"]) - int(opener) - int(closer))
        cats = rng.sample(CATEGORIES, rng.randint(1, 3))
        groups = []  # a follow-up stays glued to the exchange it follows
        count = 0
        while count < body_n:
            kind, pair = gen.category_pair(rng.choice(cats))
            grp = [("filler", None, pair)]
            if count + 1 < body_n and kind in ("fixed", "capital", "culture") and rng.random() < 0.12:
                grp.append(("filler", None, rng.choice(B.FOLLOWUPS)))
            if count + 1 < body_n and kind == "joke" and rng.random() < 0.35 and gen.jokes:
                grp.append(("filler", None, (rng.choice(B.JOKE_MORE)[0], gen.jokes.pop())))
            groups.append(grp)
            count += len(grp)
        for it in s["fixed"]:
            groups.insert(rng.randint(0, len(groups)), [it])
        items = [it for grp in groups for it in grp]
        if opener:
            items.insert(0, ("filler", None, rng.choice(B.OPENERS)))
        if closer:
            items.append(("filler", None, rng.choice(B.CLOSERS)))
        msgs = []
        for kind, fi, (u, a) in items:
            if kind == "target":
                targets[fi] = (s["id"], len(msgs))
            msgs.append({"role": "user", "text": u})
            msgs.append({"role": "assistant", "text": a})
        out_sessions.append({"id": s["id"], "messages": msgs})

    queries = []
    qn = 0
    for kind in ("paraphrase", "lexical"):
        for fi, f in enumerate(F.FACTS):
            if f["kind"] != kind:
                continue
            qn += 1
            sid, idx = targets[fi]
            queries.append({"id": "q%02d" % qn, "text": f["query"], "kind": kind,
                            "target": {"session": sid, "index": idx}})
    no_answer = [{"id": "n%02d" % (i + 1), "text": t} for i, t in enumerate(F.NO_ANSWER)]
    return {"sessions": out_sessions, "queries": queries, "no_answer": no_answer}


def main():
    data = build()
    with open(OUT, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    nm = sum(len(s["messages"]) for s in data["sessions"])
    print("sessions %d, messages %d, queries %d, no_answer %d -> %s"
          % (len(data["sessions"]), nm, len(data["queries"]), len(data["no_answer"]), OUT))


if __name__ == "__main__":
    main()
