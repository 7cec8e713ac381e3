"""Every format of JSON Schema 2020-12 is asserted on interrupt answers, ``iri`` and
``iri-reference`` by `eventlog.interrupts.iri` (RFC 3987 by way of RFC 3986's checker)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from eventlog.interrupts.iri import is_iri, is_iri_reference
from eventlog.interrupts.schema import check_schema, validate

FORMATS = [
    ("date-time", "2030-01-01T12:00:00Z", "2030-01-01 noon"),
    ("date", "2030-01-31", "2030-02-31"),
    ("time", "12:00:00Z", "25:00:00Z"),
    ("duration", "P1DT2H", "one day"),
    ("email", "ada@example.com", "ada at example.com"),
    ("idn-email", "ada@exämple.com", "ada"),
    ("hostname", "example.com", "-bad-.com"),
    ("idn-hostname", "exämple.com", "ex ample.com"),
    ("ipv4", "192.0.2.1", "192.0.2.256"),
    ("ipv6", "2001:db8::1", "2001:db8::g"),
    ("uri", "https://example.com/a", "not a uri"),
    ("uri-reference", "../a?b", "a b"),
    ("iri", "https://exämple.com/päth", "/relative"),
    ("iri-reference", "/päth?q=ü", "a b"),
    ("uuid", "8c5b5b8e-2f7e-4a55-9a64-1d0b6f1c2a3e", "8c5b5b8e"),
    ("uri-template", "https://example.com/{id}", "https://example.com/{id"),
    ("json-pointer", "/a/b", "a/b"),
    ("relative-json-pointer", "0/a", "/a"),
    ("regex", "^a+$", "(unclosed"),
]


@pytest.mark.parametrize(("name", "good", "bad"), FORMATS, ids=[f[0] for f in FORMATS])
def test_every_format_is_asserted(name: str, good: str, bad: str) -> None:
    """A value of the format passes; one that is not is refused, naming the format."""
    schema = {"type": "string", "format": name}
    assert None is check_schema(schema)
    assert (None, True) == (validate(good, schema), name in (validate(bad, schema) or ""))


@pytest.mark.parametrize("text", [
    "http://example.com/", "https://exämple.com/päth?q=ü#frag", "http://例子.测试",
    "urn:isbn:0451450523", "mailto:ada@example.com", "http://[::1]:80/",
    "http://a/\U0001f600", "http://a/?\ue000", "http://user:pä@h/",
])
def test_iris_rfc_3987_allows(text: str) -> None:
    """IRIs (an IP literal with a port and a character beyond the BMP included, which
    rfc3987_syntax refused) are IRIs and IRI references."""
    assert (True, True) == (is_iri(text), is_iri_reference(text))


@pytest.mark.parametrize("text", [
    "ü://x", "http://host:8ü/", "http://[::ü]/", "http://a/\ue000", "http://a/#\ue000",
    "http://a b", "http://a/%zz", "http://a/\x7f", "http://a/\ufffe",
])
def test_strings_rfc_3987_refuses(text: str) -> None:
    """A non-ASCII character where RFC 3987 allows none (the scheme, the port, an IP
    literal; a private-use one outside the query), a space, a bad escape: refused."""
    assert (False, False) == (is_iri(text), is_iri_reference(text))


def test_relative_references_are_iri_references_only() -> None:
    """A relative reference is an IRI reference but not an IRI."""
    assert [(False, True)] * 3 == [(is_iri(text), is_iri_reference(text))
                                   for text in ("/päth", "?ü", "#ü")]


def test_iri_is_asserted_without_rfc3987_syntax() -> None:
    """Where rfc3987_syntax is not installed (the project no longer depends on it),
    ``iri`` is still asserted: jsonschema alone would leave it unchecked."""
    code = (
        "import sys\n"
        "sys.modules['rfc3987_syntax'] = None  # as if it were not installed\n"
        "from eventlog.interrupts.schema import validate\n"
        "print(validate('/relative', {'format': 'iri'}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                          text=True)
    assert "is not a 'iri'" in done.stdout
