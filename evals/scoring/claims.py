"""Where a claim is made, denied or dismissed: clauses, negation, dismissal, commitment and abstention.

A claim (an `expect.yaml` phrasing) is matched in normalised sentences. What it means there depends on the
clause around it, not on a word anywhere in the sentence:

- negated: a negation ("not", "no", "never", "without", …) stands between the start of the clause that ends
  the match and the claim's own words — in the window of a regex (`search-indexer is not oomkilled`) or
  before the claim (`no pod is oomkilled`, `there is no sign that …`). Negations that are the claim's own words
  (`does not exist` in the phrasing) do not count.
- dismissed: the clause naming it dismisses it (`… is unrelated`, `… has nothing to do with …`, `… is a red
  herring`, `… is a symptom`), a continuation of that clause does (`…, which is unrelated`, `…, but that does not
  affect …`, or the next sentence starting with "this"/"that"/"it"), or the claim sits in a concessive clause
  (`although …`, `despite …`, `rather than …`, `instead of …`, `unlike …`). "Although the log shows X, the
  cause is Y" blames Y, not X.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from .answer import normalize

NEGATION = re.compile(r"\b(?:not|no(?! longer)|never|none|nothing|nor|neither|without|cannot|lacks? any)\b|n't\b")
COORDINATION = re.compile(r"\s(?:and|or)\s")
DISMISSAL = re.compile(
    r"\b(?:unrelated|not related|(?:has|have|had) nothing to do|nothing to do with|not (?:the|a) (?:root )?cause|"
    r"not (?:the )?(?:reason|culprit|problem)|not responsible|not why|isn't why|red herring|ruled? out|"
    r"irrelevant|not relevant|coinciden(?:t|tal|ce)|benign|harmless|noise|distraction|pre-?existing|predates?|"
    r"(?:does|do|did|would|could|can)(?: not|n't) (?:explain|affect|cause|impact|matter|touch|involve|break)|"
    r"cannot explain|separate (?:issue|problem|incident)|independent of|no (?:impact|effect|bearing|role|part)|"
    r"not caused by|(?:only|just|merely) (?:a )?(?:symptom|consequence|side effect|result)|"
    r"(?:a|the) (?:symptom|consequence|side effect|downstream effect)|only affects|affects only|"
    r"can be ignored|ignore|(?:is|are|was|were) (?:fine|ok|healthy|working|expected)|"
    r"plays? no part|played no part|(?:a |an )?(?:coincidence|aside)|"
    r"where (?:none|no one|neither) of\b[^.]{0,80}\b(?:runs?|ran|lives?|is scheduled|are scheduled|is|are)|"
    r"where no (?:\S+ ){0,3}pods? (?:of [^.]{0,60})?(?:runs?|ran|is|are))\b")
# a clause that only says "not this one", standing before what it dismisses: "Unrelated to this alert: X …"
PREPOSED = re.compile(
    r"^(?:(?:it is|it's|this is|that is|as an aside|by the way) )?(?:(?:completely|entirely|also) )?(?:unrelated|"
    r"not related|a coincidence|coincidental(?:ly)?|a red herring|(?:only|just|merely) a (?:symptom|side effect)|"
    r"a (?:symptom|side effect)|not the (?:root )?cause|irrelevant|not relevant|harmless|benign|"
    r"no part of (?:it|this|the) ?[^,;:]{0,40}|"
    r"(?:does not|doesn't) matter|(?:also )?seen(?:,)? but unrelated)(?: (?:to|of|for|with|in) [^,;:]{0,80}| here)?$")
# a clause that opens a new statement: a preposed dismissal does not reach past it
NEW_STATEMENT = re.compile(r"^(?:but|however|yet|so|whereas|while|instead|rather|the (?:root )?cause|"
                           r"the (?:real|actual) (?:cause|problem|culprit))\b")
# a clause that is only a predicate, its subject the clause before: "…, repeated every minute, is unrelated"
PREDICATE = re.compile(r"^(?:(?:and|but|yet) )?(?:(?:which|that|it|this|they|these|those|both|all of (?:them|this)) )?"
                       r"(?:is|are|was|were|has|have|had|plays?|played|does|do|did|seems?|appears?|looks?|only|just|"
                       r"merely)\b")
CONCESSIVE = re.compile(r"^(?:although|though|even though|despite|in spite of|rather than|instead of|unlike|"
                        r"other than|apart from|besides|whereas|not)\b")
CONTINUATION = re.compile(r"^(?:(?:but|and|so|yet) )?(?:which|that|this|it|these|they|those|is|are|was|were|has|"
                          r"have|had|does|do|did|can|could|would|will|only)\b")
CLAUSE_BREAK = re.compile(r"\s*[,;:\u2014\u2013]\s+|\s+-\s+|\s+(?=(?:although|though|even though|despite|in spite of|"
                          r"rather than|instead of|whereas|while|but|however|because|since|so|yet|which|unlike)\b)"
                          r"|\s+and\s+(?=(?:that|this|it|the|a|an|its|their)\b)")
ANAPHORA = re.compile(r"^(?:which|(?:it|this|that|they|these|those) (?:(?:only|also|just|clearly|simply) )?"
                      r"(?:is|was|are|were|has|had|have|does|did|do|can|could|only|also|just|plays?|played|"
                      r"seems?|appears?|looks?)\b)")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")
WINDOW = re.compile(r"\[\^(?P<body>[^\]]*)\](?P<q>\{\d*,?\d*\}|[*+?])?|(?<!\\)\.(?P<dq>\{\d*,?\d*\}|[*+])")

HEDGE = re.compile(r"\b(?:could|might|may) (?:be|have|also|well)\b|\bpossibl[ey]\b|\bperhaps\b|\bmaybe\b|"
                   r"\balternatively\b|\beither\b.{0,120}\bor\b|\bit is also possible\b|\bunclear (?:which|whether)\b|"
                   r"\bnot sure\b|\bhard to say\b|\bcannot rule out\b|\bor (?:possibly|perhaps|maybe)\b")
SEVERAL = re.compile(
    r"\b(?:one of (?:several|these|the following|many|a few)|any of (?:these|the following)|(?:several|multiple|"
    r"various|a number of|a few|a combination of|combined|many) (?:possible |potential |candidate |likely |"
    r"contributing |different |independent )?(?:root )?(?:causes|factors|issues|problems|possibilities|explanations|"
    r"things|reasons|suspects)|(?:possible|potential|candidate) (?:root )?causes)\b")
ABSTAIN = re.compile(
    r"\b(?:undetermined|not (?:been )?determined|(?:could|can)(?: not|not|'t) be determined|unable to determine|"
    r"inconclusive|(?:is|remains|still) unknown|not (?:yet )?known|no (?:clear |single |definitive )?root cause|"
    r"(?:evidence|data|tool output|investigation) (?:does not|doesn't|do not|did not|didn't) (?:show|reveal|"
    r"point to|establish|identify|explain)|(?:not enough|insufficient) (?:evidence|information|data)|"
    r"(?:could|can)(?: not|not|'t) (?:find|identify|establish) (?:a|the|any) (?:root )?cause)\b")


@dataclass(frozen=True)
class Hit:
    sentence: str
    start: int
    end: int
    negated: bool
    dismissed: bool
    denied_after: bool  # the rest of its clause denies what it names: "disk pressure there evicted nothing"

    @property
    def asserted(self) -> bool:
        return not (self.negated or self.dismissed)

    @property
    def blamed(self) -> bool:
        """For a red herring: a negative statement about it is not a blame."""
        return self.asserted and not self.denied_after


Phrase = tuple[re.Pattern, re.Pattern]  # lazy and greedy windows


@cache
def compile_phrase(phrase: str, is_regex: bool) -> Phrase:
    """A regex with its windows as named groups (`w0`, `w1`, …), once with lazy and once with greedy windows;
    a period inside a name (`ghcr.io`, `2.8.1`, `10.0.0.1`) does not end a `[^.]` window — only one before a
    space or the end of the text does."""
    if not is_regex:
        plain = re.compile(re.escape(normalize(phrase)))
        return plain, plain
    return _windowed(phrase, lazy=True), _windowed(phrase, lazy=False)


def _windowed(phrase: str, *, lazy: bool) -> re.Pattern:
    counter = iter(range(1000))

    def window(match: re.Match) -> str:
        quantifier = match.group("q") or match.group("dq") or ""
        if match.group("body") is None:
            return f"(?P<w{next(counter)}>.{quantifier}{'?' if lazy else ''})"
        body = match.group("body")
        char = f"(?:[^{body}]|\\.(?=\\S))" if "." in body.replace("\\.", ".") else f"[^{body}]"
        return f"(?P<w{next(counter)}>{char}{quantifier}{'?' if lazy and quantifier and quantifier != '?' else ''})"

    return re.compile(WINDOW.sub(window, phrase), re.S)


def sentences(text: str) -> list[str]:
    return [normalize(s) for s in SENTENCE_END.split(text) if s.strip()]


def _clauses(sentence: str) -> list[tuple[int, int]]:
    bounds, start = [], 0
    for brk in CLAUSE_BREAK.finditer(sentence):
        if brk.start() > start:
            bounds.append((start, brk.start()))
        start = brk.end()
    bounds.append((start, len(sentence)))
    return bounds


def _clause_at(clauses: list[tuple[int, int]], position: int) -> int:
    return next((i for i, (s, e) in enumerate(clauses) if s <= position <= e), len(clauses) - 1)


def clause_span(sentence: str, start: int, end: int) -> tuple[int, int]:
    """The clauses of `sentence` that the span `start:end` touches, as one span."""
    clauses = _clauses(sentence)
    return clauses[_clause_at(clauses, start)][0], clauses[_clause_at(clauses, max(end - 1, start))][1]


def _negated(sentence: str, match: re.Match, clauses: list[tuple[int, int]]) -> bool:
    """A negation before the match in its clause (after the last "and"/"or": "can no longer use an index and
    sequentially scans" does not deny the scan), or in its windows within the clause that ends it."""
    clause_start = clauses[_clause_at(clauses, match.start())][0]
    coordinated = [m.end() for m in COORDINATION.finditer(sentence, clause_start, match.start())]
    start = coordinated[-1] if coordinated else clause_start
    end_clause = clauses[_clause_at(clauses, max(match.end() - 1, match.start()))][0]
    windows = [match.span(name) for name, value in match.groupdict().items() if name.startswith("w") and value]
    regions = [(start, match.start())] + [(max(s, end_clause), e) for s, e in windows]
    return any(NEGATION.search(sentence, s, e) for s, e in regions if e > s)


def _dismissed(sentences_: list[str], index: int, clauses: list[tuple[int, int]], at: int) -> bool:
    """The clause at `at` dismisses what it names: by its own words, as a concessive clause ("rather than X"), as a
    continuation of a dismissal ("X is unrelated: it only …"), by a dismissal preposed ("Unrelated: X …") or
    postposed ("X, seen on node-7 since 02:00, is unrelated"), or by the next sentence ("It plays no part …")."""
    sentence = sentences_[index]
    text = sentence[clauses[at][0]:clauses[at][1]]
    if CONCESSIVE.match(text) or DISMISSAL.search(text):
        return True
    if at and ANAPHORA.match(text) and _dismissing(sentence, clauses, at - 1):
        return True  # "X is unrelated: it only affects the backup job" goes on about X; "rather than X, this is Y" not
    for start, end in clauses[at + 1:]:
        following = sentence[start:end]
        if not CONTINUATION.match(following):
            break
        if DISMISSAL.search(following):
            return True  # "X, but that does not affect Y"
    if _preposed(sentence, clauses, at) or _postposed(sentence, clauses, at):
        return True
    if all(CONTINUATION.match(t) or not (NEW_STATEMENT.match(t) or CONCESSIVE.match(t) or DISMISSAL.search(t))
           for t in (sentence[s:e] for s, e in clauses[at + 1:])):
        nxt = sentences_[index + 1] if index + 1 < len(sentences_) else ""
        first = nxt[:_clauses(nxt)[0][1]] if nxt else ""
        return bool(ANAPHORA.match(first) and DISMISSAL.search(first))
    return False


def _dismissing(sentence: str, clauses: list[tuple[int, int]], at: int) -> bool:
    """The clause at `at` says of its subject that it is not the cause (a concessive clause names no subject)."""
    text = sentence[clauses[at][0]:clauses[at][1]]
    if CONCESSIVE.match(text):
        return False
    return DISMISSAL.search(text) is not None or (at > 0 and ANAPHORA.match(text) is not None
                                                  and _dismissing(sentence, clauses, at - 1))


def _preposed(sentence: str, clauses: list[tuple[int, int]], at: int) -> bool:
    """The clause before says "not this one" ("Unrelated to this alert: X …"), or the one before that when this
    one goes on about X ("…: X, which …")."""
    if at == 0 or NEW_STATEMENT.match(sentence[clauses[at][0]:clauses[at][1]]):
        return False
    before = sentence[clauses[at - 1][0]:clauses[at - 1][1]]
    if PREPOSED.match(before):
        return True
    return bool(CONTINUATION.match(sentence[clauses[at][0]:clauses[at][1]])) and _preposed(sentence, clauses, at - 1)


def _postposed(sentence: str, clauses: list[tuple[int, int]], at: int) -> bool:
    """A later clause that is only a dismissing predicate, with nothing between that opens a new statement."""
    for start, end in clauses[at + 1:]:
        text = sentence[start:end]
        if NEW_STATEMENT.match(text) or CONCESSIVE.match(text):
            return False
        if PREDICATE.match(text) or text.startswith(("on ", "in ", "at ")):
            return DISMISSAL.search(text) is not None
    return False


def _ends(pattern: re.Pattern, sentence: str, start: int) -> Iterator[re.Match]:
    """Every match that starts at `start`, farthest end first: a window may reach a later predicate."""
    endpos = len(sentence)
    while endpos > start:
        match = pattern.match(sentence, start, endpos)
        if not match:
            return
        yield match
        endpos = match.end() - 1


def hits(phrase: Phrase, sentences_: list[str]) -> list[Hit]:
    """Every place the phrasing matches, with what the clause around it does to it; of the matches from one
    start, the first that is not negated. A match that is negated is tried again from each later start, so a
    window that reaches back into a negated clause ("no route for docs-site, but docs-site's deploy is the cause")
    does not hide the claim after it."""
    lazy, greedy = phrase
    out = []
    for index, sentence in enumerate(sentences_):
        clauses = _clauses(sentence)
        pos = 0
        while pos <= len(sentence) and (first := lazy.search(sentence, pos)):
            at_start = _clause_at(clauses, first.start())
            dismissed = _dismissed(sentences_, index, clauses, at_start)
            matches = [first, *_ends(greedy, sentence, first.start())]
            negated = [_negated(sentence, m, clauses) for m in matches]
            after = sentence[first.end():clauses[_clause_at(clauses, first.end())][1]]
            out.append(Hit(sentence, first.start(), first.end(), all(negated), dismissed,
                           NEGATION.search(after) is not None))
            pos = first.start() + 1 if all(negated) else max(first.end(), first.start() + 1)
    return out


def uncommitted(conclusion: str, root: str) -> str:
    """Why the conclusion does not commit to one cause, or ''."""
    text = normalize(conclusion)
    several = SEVERAL.search(text)
    if several:
        return f"names several candidates: {several.group(0)!r}"
    hedged = [s for s in sentences(conclusion) if HEDGE.search(s)]
    if len(hedged) >= 2:
        return f"hedges between candidates in {len(hedged)} sentences"
    lines = [line.strip() for line in root.strip().splitlines() if line.strip()]
    items = [line for line in lines if re.match(r"(?:[-*+]|\d+[.)])\s", line)]
    if lines and len(items) >= 2 and (lines[0] in items or lines[0].endswith(":")):
        return f"lists {len(items)} causes without a statement that commits to one"
    first = (sentences(root) or [""])[0]
    if ABSTAIN.search(first):  # only the statement itself: "why memory grew is unknown" later is a fair caveat
        return "says the cause is not known, but the evidence shows it"
    return ""


def abstains(root: str) -> bool:
    """The root-cause statement says plainly that the evidence does not show a cause."""
    return ABSTAIN.search(normalize(root)[:300]) is not None
