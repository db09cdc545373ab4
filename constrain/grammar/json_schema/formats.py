"""``format`` as regular languages over the decoded string (full match).

Each entry follows its RFC; where a rule is not regular or is impractically large
(a hostname's 253-byte total length) the tree is the closest *stricter-or-equal*
language we can state and the difference is listed in :data:`FORMAT_NOTES`.
Dates are exact, including month lengths and leap years (a finite rule over four
year digits).
"""

from __future__ import annotations

from ..regex import RegexNode, parse_regex

__all__ = ["FORMATS", "FORMAT_MAX_LENGTH", "FORMAT_NOTES", "UNENFORCEABLE_FORMATS"]

_YEAR = r"\d{4}"
_LEAP_YEAR = r"(?:\d\d(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
_DATE = (
    rf"(?:{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)"
    rf"|02-(?:0[1-9]|1\d|2[0-8]))|{_LEAP_YEAR}-02-29)"
)
_OFFSET = r"(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)"
# A leap second (:60) is valid only at 23:59 UTC; checking that for any offset needs a
# state per local minute (1,440), so only the zero offsets are allowed for it (stricter).
_TIME = (rf"(?:(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?{_OFFSET}"
         rf"|23:59:60(?:\.\d+)?(?:[Zz]|[+-]00:00))")
_DEC_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = rf"{_DEC_OCTET}(?:\.{_DEC_OCTET}){{3}}"
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_IPV4})"
_IPV6 = "(?:" + "|".join([
    rf"(?:{_H16}:){{6}}{_LS32}",
    rf"::(?:{_H16}:){{5}}{_LS32}",
    rf"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
    rf"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
    rf"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
    rf"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
    rf"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
    rf"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
    rf"(?:(?:{_H16}:){{0,6}}{_H16})?::",
]) + ")"
# Letters/digits/hyphens, 1-63 long, no hyphen at either end, and not "--" in the third
# and fourth places (reserved for IDNA A-labels, "xn--", whose punycode is not regular to
# check: refused, which is stricter than RFC 5891).
_LD = r"[A-Za-z0-9]"
_LABEL_TAIL = rf"(?:{_LD}(?:[A-Za-z0-9-]{{0,59}}{_LD})?|-{_LD}(?:[A-Za-z0-9-]{{0,58}}{_LD})?)"  # places 3..63
_LABEL = rf"{_LD}(?:{_LD}|[A-Za-z0-9-]{_LABEL_TAIL})?"
_HOSTNAME = rf"{_LABEL}(?:\.{_LABEL})*"
# RFC 3986
_PCT = r"%[0-9A-Fa-f]{2}"
_UNRESERVED = r"A-Za-z0-9\-._~"
_SUBDELIMS = r"!$&'()*+,;="
_SCHEME = r"[A-Za-z][A-Za-z0-9+.\-]*"
# ABNF's quoted strings ignore case (RFC 5234 section 2.3): "v" of IPvFuture, "IPv6:" of RFC 5321.
_IP_LITERAL = rf"\[(?:{_IPV6}|[Vv][0-9A-Fa-f]+\.[{_UNRESERVED}{_SUBDELIMS}:]+)\]"


def _ranges(pairs) -> str:
    """Code point ranges as the inside of a character class."""
    return "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in pairs)


# RFC 3987: the characters IRIs add to URIs' unreserved ones (ucschar), and in queries (iprivate).
_UCSCHAR = _ranges([(0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF),
                    *((plane, plane + 0xFFFD) for plane in range(0x10000, 0xE0000, 0x10000)), (0xE1000, 0xEFFFD)])
_IPRIVATE = _ranges([(0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD)])


def _references(unreserved: str, private: str = "") -> tuple[str, str]:
    """An absolute reference and a relative one, RFC 3986 over ``unreserved`` characters
    (RFC 3987's IRIs: with ucschar, and ``private`` ones in queries)."""
    pchar = rf"(?:[{unreserved}{_SUBDELIMS}:@]|{_PCT})"
    userinfo = rf"(?:[{unreserved}{_SUBDELIMS}:]|{_PCT})*"
    reg_name = rf"(?:[{unreserved}{_SUBDELIMS}]|{_PCT})*"
    authority = rf"(?:{userinfo}@)?(?:{_IP_LITERAL}|{_IPV4}|{reg_name})(?::\d*)?"
    path_abempty = rf"(?:/{pchar}*)*"
    path_absolute = rf"/(?:{pchar}+(?:/{pchar}*)*)?"
    path_rootless = rf"{pchar}+(?:/{pchar}*)*"
    path_noscheme = rf"(?:[{unreserved}{_SUBDELIMS}@]|{_PCT})+(?:/{pchar}*)*"
    query = rf"(?:\?(?:{pchar}|[/?{private}])*)?"
    fragment = rf"(?:#(?:{pchar}|[/?])*)?"
    hier = rf"(?://{authority}{path_abempty}|{path_absolute}|{path_rootless}|)"
    relative = rf"(?://{authority}{path_abempty}|{path_absolute}|{path_noscheme}|){query}{fragment}"
    return rf"{_SCHEME}:{hier}{query}{fragment}", relative


_URI, _RELATIVE = _references(_UNRESERVED)
_IRI, _IRELATIVE = _references(_UNRESERVED + _UCSCHAR, _IPRIVATE)
_ATEXT = r"A-Za-z0-9!#$%&'*+/=?^_`{|}~\-"
_QTEXT = r" !#-\[\]-~"  # RFC 5321 qtextSMTP: printable ASCII but '"' and '\'
_UTF8_NON_ASCII = _ranges([(0x80, 0xD7FF), (0xE000, 0x10FFFF)])  # RFC 6532: every scalar value past ASCII


def _email(extra: str = "") -> str:
    """RFC 5321 mailboxes: a dot-atom or quoted local part (``extra`` characters added to
    both: RFC 6531's non-ASCII ones), then a host name or an IPv4 or IPv6 address literal."""
    dot_atom = rf"[{_ATEXT}{extra}]+(?:\.[{_ATEXT}{extra}]+)*"
    quoted = rf'"(?:[{_QTEXT}{extra}]|\\[ -~])*"'
    return rf"(?:{dot_atom}|{quoted})@(?:{_HOSTNAME}|\[{_IPV4}\]|\[[Ii][Pp][Vv]6:{_IPV6}\])"


_EMAIL = _email()
# RFC 3339 appendix A: each unit may be followed only by the next one down (dur-year =
# 1*DIGIT "Y" [dur-month], dur-month = ... [dur-day]), so P1Y2D and PT1H2S are not durations.
_DUR_TIME = r"T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)"
_DURATION = rf"P(?:(?:\d+D|\d+M(?:\d+D)?|\d+Y(?:\d+M(?:\d+D)?)?)(?:{_DUR_TIME})?|{_DUR_TIME}|\d+W)"
_UUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
_JSON_POINTER = r"(?:/(?:[^~/]|~[01])*)*"

_VARCHAR = rf"(?:[A-Za-z0-9_]|{_PCT})"
_VARSPEC = rf"{_VARCHAR}(?:\.?{_VARCHAR})*(?::[1-9]\d{{0,3}}|\*)?"
# RFC 6570 literals: ASCII except controls, space, '"', '%', '<', '>', '\\', '^', '`', '{', '|',
# '}' (the apostrophe too, as the official suite reads it), and ucschar and iprivate in every
# plane, written here as the characters themselves.
_URI_TEMPLATE = (
    rf"(?:[!#$&'(-;=?-\[\]_a-z~{_UCSCHAR}{_IPRIVATE}]|{_PCT}"
    rf"|\{{[+#./;?&=,!@|]?{_VARSPEC}(?:,{_VARSPEC})*\}})*"
)

# A regular expression: the syntax ECMA-262 (with or without the u flag) and Python's ``re``
# both accept, groups nested at most _REGEX_DEPTH deep (nesting is not regular).  Escapes are
# the syntax characters and '/', the classes \d\w\s and their negations, the controls
# \f\n\r\t\v, \xHH and \uHHHH; ranges run up from 0 or 1, a or A (below); '-' is literal
# first or last in a class, '^' only escaped; groups are plain or (?:), and no look-arounds
# (each kind of group nested is one more copy of the language below it); quantifiers are
# * + ? {n} {n,} {n,m} (n <= m, nine digits at most), lazy or not.
_RE_ESCAPES = r"\\[\^$\\.*+?()\[\]{}|/dDwWsSfnrtv]|\\x[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}"
_RE_CLASS_ATOM = rf"(?:[^\\\]\[\-^]|{_RE_ESCAPES}|\\-)"
# Ranges from 0, 1, a or A up (0-9, 1-9, a-f, A-Z...): each start a range may have is a state
# of its own at every depth, and these four kept the automaton at 400 states (all 62, 980).
_RE_RANGE = "0-[0-9]|1-[1-9]|a-[a-z]|A-[A-Z]"
_RE_CLASS = rf"\[\^?(?:-|-?(?:{_RE_RANGE}|{_RE_CLASS_ATOM})+-?)\]"
_RE_COUNT = r"(?:\d|[1-9]\d{1,8})"  # Python's re takes counts below 2**32 - 1
_RE_BOUNDS = "|".join([r"\d,[1-9]\d{1,8}"] + [f"{n},[{n}-9]" for n in range(10)])
_RE_QUANTIFIER = rf"(?:[*+?]|\{{{_RE_COUNT},?\}}|\{{(?:{_RE_BOUNDS})\}})\??"
_REGEX_DEPTH = 4


def _regex_source(depth: int) -> str:
    """The alternation of the regex syntax above with groups nested ``depth`` deep."""
    groups = "" if depth == 0 else rf"|\((?:\?:)?{_regex_source(depth - 1)}\)"
    atom = rf"(?:\.|[^\^$\\.*+?()\[\]{{}}|]|{_RE_ESCAPES}|{_RE_CLASS}{groups})"
    sequence = rf"(?:[\^$]|\\[bB]|{atom}(?:{_RE_QUANTIFIER})?)*"
    return rf"(?:{sequence}(?:\|{sequence})*)"


_SOURCES: dict[str, str] = {
    "date-time": rf"{_DATE}[Tt]{_TIME}",
    "date": _DATE,
    "time": _TIME,
    "duration": _DURATION,
    "email": _EMAIL,
    "hostname": _HOSTNAME,
    "ipv4": _IPV4,
    "ipv6": _IPV6,
    "uri": _URI,
    "uri-reference": rf"(?:{_URI}|{_RELATIVE})",
    "iri": _IRI,
    "iri-reference": rf"(?:{_IRI}|{_IRELATIVE})",
    "uuid": _UUID,
    "json-pointer": _JSON_POINTER,
    "uri-template": _URI_TEMPLATE,
    "relative-json-pointer": rf"(?:0|[1-9]\d*)(?:#|{_JSON_POINTER})",
    "regex": _regex_source(_REGEX_DEPTH),
    # IDNA 2008 (contextual rules, bidi) is not regular to check: ASCII names only, which
    # are valid IDN names wherever they are valid names (A-labels are refused above).
    "idn-hostname": _HOSTNAME,
    "idn-email": _email(_UTF8_NON_ASCII),
}

# Formats the spec defines that no regular language checks exactly: refused in strict mode.
UNENFORCEABLE_FORMATS: dict[str, str] = {
}

#: Lengths a format's text may not pass, in characters (RFC 1123 section 2.1: a host name is
#: at most 253 characters, with its labels of at most 63 each): a bound beside the
#: language, so it is counted like ``maxLength`` (a counted callee, not 253 eager copies).
FORMAT_MAX_LENGTH: dict[str, int] = {"hostname": 253, "idn-hostname": 253}

FORMAT_NOTES: dict[str, str] = {
    "time": "a leap second (:60) only as 23:59:60 with a zero offset",
    "date-time": "a leap second (:60) only as 23:59:60 with a zero offset",
    "hostname": "labels with '--' in the third and fourth places (IDNA A-labels such as 'xn--...') are refused",
    "email": "host names and [IPv4] or [IPv6:...] literals after the @ (no general address literals, [tag:...])",
    "uri-template": "an apostrophe is allowed in literals (RFC 6570 leaves it out; the official test suite allows it)",
    "idn-hostname": "ASCII host names only (IDNA 2008 U-labels are refused, as are A-labels)",
    "idn-email": "non-ASCII local parts, but ASCII domains only, as email (IDNA 2008 U-labels are refused)",
    "regex": (f"the syntax ECMA-262 and Python's re share, groups nested at most {_REGEX_DEPTH} deep; no "
              "look-arounds, backreferences, named groups, \\p{...} or other escapes, ranges but from 0, 1, a or A "
              "(stricter than ECMA-262)"),
}


class _LazyFormats(dict):
    """Format name -> code-point tree, parsed on first use (most schemas use none)."""

    def __missing__(self, name: str) -> RegexNode:
        tree = parse_regex(_SOURCES[name])
        self[name] = tree
        return tree

    def __contains__(self, name: object) -> bool:
        return name in _SOURCES


FORMATS: dict[str, RegexNode] = _LazyFormats()
