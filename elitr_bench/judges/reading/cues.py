r"""The cue tables: which words make a number outside the asked format a score statement.

Data, not code: each table is a regular expression alternation, and :data:`PRECEDENCE`
says in which order :func:`elitr_bench.judges.reading.vetoes.vetoes` looks at them (the
first rule that applies to a number decides). A false veto costs a reply its value, a
missed one a wrong number, so every table has replies it must and must not veto
(``tests/judges/test_reading_cues.py``).
"""

from __future__ import annotations

#: Score words: one just before a number ties it to a score ("Score: 4", "I'd rate it 7").
SCORE = (
    r"scor\w*|rat(?:e|es|ed|ing)|grad(?:e|es|ed|ing)|mark(?:s|ed)?|result|boxed|"
    r"deserv\w*|earn\w*|award\w*|merit\w*|giv(?:e|es|ing)|gave|final|verdict|settl\w*|"
    r"assess\w*|evaluation|judg(?:e?ment|ing)|say|go(?:ing)? with|call it|put|peg\w*|place|"
    r"as it (?:is|stands)|correspond\w*|equival\w*|equals?|convert\w*|translat\w*"
)
#: Revisions: the judge changes its mind ("on second thought, 6", "adjusting downward to 5").
REVISION = (
    r"revis\w*|lower\w*|rais(?:e|es|ed|ing)|adjust\w*|downgrad\w*|upgrad\w*|bump\w*|"
    r"reconsider\w*|instead|reflection|thought|correct(?:ion|ed|ing)?|actually|amend\w*"
)
#: Hedges: a value the judge entertains ("maybe 6", "I lean toward 5", "perhaps a 7").
HEDGE = r"maybe|perhaps|possibly|arguably|lean\w*|or even|if anything|closer to|nearer"
#: After a number, words that say it is the judge's value ("4 is fair", "6 fits better").
VERDICT_AFTER = (
    r"(?:is|seems|feels|looks|sounds|appears|would be|might be|may be|could be|"
    r"should be|fits|captures|reflects)(?:[ \t]+(?:more|most|a[ \t]+bit|much|a|the|"
    r"slightly|rather|quite|also|probably|perhaps|maybe))*[ \t]+(?:fair\w*|right|"
    r"appropriate|reasonable|justified|warranted|accurate|apt|fitting|suitable|better|"
    r"more[ \t]+(?:fair|appropriate|accurate|reasonable|justified)|correct|enough)"
)
#: Words that may stand between a cue and its number ("I'd rate it a solid 7").
FILLER = (
    r"it|it's|this|that|the|its|my|our|i|i'd|i'll|i'm|me|them|these|they|a|an|is|was|be|"
    r"would|will|should|could|can|of|at|to|as|with|go|going|say|call|put|give|gives|given|"
    r"get|gets|got|receives?|deserves?|earns?|merits?|lands?|sits?|stays?|remains?|comes?|"
    r"stands?|down|up|around|about|roughly|approximately|maybe|perhaps|probably|here|now|"
    r"still|then|therefore|thus|so|also|only|just|solid|strong|fair|firm|clear|generous|"
    r"low|high|full|perfect|final|overall|decent|good|weak|modest|reasonable|response|"
    r"answer|summary|minutes|output|on|like|more|really|closer|nearer|somewhere|"
    r"downward|downwards|upward|upwards|toward|towards|score|rating|grade|value|mark|"
    r"number|slightly|bit|little|even|something|probably"
)
#: Score nouns just before a number that make it a score whatever follows it
#: ("Score 3-4 of the rubric", "Rating: 5 overall"): they win over the quantity rule.
LABEL_NOUN = r"score|rating|grade|result|verdict|assessment"
#: After the number, words that keep it a possible score; any other word makes it a
#: quantity ("2 hours", "three months", "3 pm", "two of the three points").
LINK = (
    r"for|on|in|at|overall|and|or|but|because|as|since|here|which|so|with|too|also|though|"
    r"however|then|now|instead|rather|not|from|than|given|points?|pts|stars?|scale|rating|"
    r"score|grade|this|that|it|i|is|would|seems?|fits?|might|may|could|should|will|feels?|"
    r"looks?|sounds?|appears?|captures?|reflects?|makes?|works?|better|more|seem|fit|"
    r"maybe|perhaps|possibly|probably|really|honestly|actually|tops|max|at"
)
#: A scale the judge names: "on a 5-point scale", "a scale of 1 to 5", "1-5 scale",
#: "out of 5". A statement on another scale than the field's is no value of the field.
SCALE = (
    r"(?P<p>\d+|ten|five|hundred)[ \t]*-?[ \t]*point[ \t]+(?:scale|rubric)|"
    r"scale[ \t]+(?:of|from)[ \t]+\d+[ \t]*(?:-|–|to)[ \t]*(?P<f>\d+)|"
    r"\b\d[ \t]*(?:-|–|to)[ \t]*(?P<r>\d+)[ \t]+scale"
)
#: Hypotheticals: a value the reply imagines under a condition about the answer is no
#: statement ("with the date it would be a 10", "if it had named the owner, 8", "a 10 but
#: for two run-on sentences", "a response that only said 'I don't know' would get a 2");
#: "if anything, a 7" and "if I had to choose, 7" are statements.
HYPOTHETICAL = (
    r"\bif[ \t]+(?:it|the|they|this|that|there|he|she|its|their)\b|"
    r"\bhad[ \t]+(?:it|they|the|this)\b|\bwere[ \t]+(?:it|they)\b|\bbut[ \t]+for\b|"
    r"\bwould[ \t]+have\b|\bcould[ \t]+have\b|\bwith(?:out)?\b[^.;\n]*\bit[ \t]+would\b|"
    r"\b(?:a|an|any)[ \t]+(?:response|answer|reply|summary)[ \t]+(?:that|which|with|without)\b"
)
#: Before a number, words that set it aside: a value compared with, ruled out or left
#: ("more than the level of Score 3-4", "cannot reach Score 7-8", "instead of 4",
#: "lowered from 7 to 6"); a bound ("no more than a 5") is a statement.
REJECTED_BEFORE = (
    r"(?:(?<!no more )(?<!no less )(?<!not more )(?<!no higher )\bthan|\binstead[ \t]+of|"
    r"\brather[ \t]+than|\bbeyond|\bshort[ \t]+of|\babove|"
    r"\bbelow|\bexceed\w*|\bfrom|\bbetween|\b(?:can ?not|can't|could ?not|couldn't|does ?n[o']t|"
    r"do ?n[o']t|won't|would ?n[o']t|not|never)[ \t]+(?:quite[ \t]+)?(?:reach|deserve|merit|"
    r"warrant|justify|earn|get|qualify|fit|match|belong|be|a|an))(?:\W+[\w']+){0,6}\W*$"
)
#: After a number, words that set it aside ("a 4 would be too harsh", "2 would understate").
REJECTED_AFTER = (
    r"^[ \t]+(?:(?:would|will|might|could|is|seems?|feels?)[ \t]+)?(?:be[ \t]+)?"
    r"(?:too\b|overly\b|excessive|understat\w*|overstat\w*|unfair|unwarranted|harsh|"
    r"not[ \t]+(?:justified|warranted|appropriate|fair))"
)
#: Before a number, another party's value ("Agent B proposed a rating of 1", "the
#: reference gave 6", "PERSON4 gave the demo a rating: 5").
ATTRIBUTED = (
    r"\b(?:agent|agents|person\w*|other|another|client|speaker|reviewer|evaluator|"
    r"participants?|reference|summary|minutes|transcript|he|she|they)\b[^.;\n]{0,30}?\b"
    r"(?:propos\w*|gave|gives|assign\w*|suggest\w*|said|says|claim\w*|rated|scored)\b"
    r"(?:\W+[\w']+){0,6}\W*$"
)
#: Before a number, an aggregate of several values ("Average of adequacy, relevance and
#: topicality: 8.3"): no field's value.
AGGREGATE = r"\b(?:average|mean|total|sum|combined|aggregate)\b[^.;\n]{0,60}$"
#: A sentence in which the judge says which scale it scores on ("I will rate each criterion
#: on a 1-5 scale", "Using a 5-point scale, ..."): with a scale of :data:`SCALE`, every
#: value of the fields it names (or of all) is on that scale.
SCALE_DECLARED = r"\b(?:i|i'll|i'd|i'm|my|we|we'll|our)\b"
#: A percentage next to a field's label ("my confidence ... is 80%", "80% confident") is
#: that field's value on a scale to 100 (this many words may stand between); any other
#: percentage is content.
PERCENT_LABEL_WORDS = 4
#: Another field's value a few words before a number ("severity 7" in a rating reply).
FOREIGN = r"severit(?:y|ies)|certaint(?:y|ies)"

#: The order the rules are looked at in, for each number outside the asked format.
PRECEDENCE = (
    "blanked: quoted text, the evaluated text's lines and the prompt's own phrases",
    "hypothetical: a number in a sentence with a condition is no statement",
    "foreign: another field's label just before it makes it that field's",
    "set aside: a value compared with, ruled out, left, another party's or an aggregate "
    "('average of ...: 8.3') is no statement",
    "label noun: 'score'/'rating' or the field's label just before it makes it a score",
    "content: a percentage, a time, a list marker, a compound, a quantity noun after it",
    "elided quantity: the cue word of a quantity in the same sentence ('gave 5 examples "
    "where the reference gave 6')",
    "cue: a score word, revision or hedge before it; the label, a score noun or a verdict "
    "after it; a scale after it; an article before it",
    "scale: a named scale other than the field's (beside the number, or declared by the judge "
    "for the reply) makes the statement ambiguous, unless the sentence converts it",
)
