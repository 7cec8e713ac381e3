"""Signed digests and a digest's scope (issue 21, item 9).

A digest's SHA-256 can be recomputed by whoever edits the file: someone who cuts a
stream and rewrites the digest's head to match passes an unsigned digest. A digest signed
with the operator's Ed25519 key cannot be edited so: `verify --digest F --key PUB` checks
the signature first and refuses. And a digest holding no stream of the verified scope
(`--tenant u` against a digest of t) is an error, not a silent pass.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from eventlog.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from eventlog.digest import LogDigest, StreamHead, decode_digest, encode_digest
from eventlog.errors import InvalidInput
from eventlog.signing import generate_key_pair, key_id, load_private_key, load_public_key
from tests.cli.helpers import Run
from tests.cli.test_digest import build, cut_tail
from tests.conftest import BackendTarget

sqlite_only = pytest.mark.parametrize("target", ["sqlite"], indirect=True)
HEADS = (StreamHead(tenant_id="t", stream_id="a", version=5, hash=b"\x05" * 32),
         StreamHead(tenant_id="t", stream_id="b", version=3, hash=b"\x03" * 32))
DIGEST = LogDigest(taken_at=datetime(2030, 1, 1, tzinfo=UTC), tenant_id=None, streams=HEADS)


@pytest.fixture(scope="module")
def keys() -> tuple[bytes, bytes]:
    """One key pair (private PEM, public PEM)."""
    return generate_key_pair()


def key_files(tmp_path: Path, keys: tuple[bytes, bytes]) -> tuple[str, str]:
    (tmp_path / "key.pem").write_bytes(keys[0])
    (tmp_path / "key.pub.pem").write_bytes(keys[1])
    return str(tmp_path / "key.pem"), str(tmp_path / "key.pub.pem")


def recompute(document: dict[str, object]) -> bytes:
    """The document with its SHA-256 digest recomputed over its (edited) heads, as an
    editor who knows the format would; the signature is left as it was."""
    streams = document["streams"]
    assert isinstance(streams, list)
    heads = tuple(sorted(StreamHead(tenant_id=s["tenant"], stream_id=s["stream"],
                                    version=s["version"], hash=bytes.fromhex(s["hash"]))
                         for s in streams))
    tenant = document["tenant"]
    assert tenant is None or isinstance(tenant, str)
    document["digest"] = LogDigest(taken_at=DIGEST.taken_at, tenant_id=tenant,
                                   streams=heads).digest
    return json.dumps(document).encode()


def test_a_signed_digest_round_trips_and_an_edited_one_is_refused(
    keys: tuple[bytes, bytes],
) -> None:
    """Signed with the private key, checked with the public key: equal; heads edited
    and the SHA-256 recomputed pass without the key (all an unsigned digest can prove)
    and are refused with it; another key, no signature and a changed time are refused."""
    private, public = load_private_key(keys[0]), load_public_key(keys[1])
    signed = encode_digest(DIGEST, private)
    back = decode_digest(signed, public)
    assert back.streams == DIGEST.streams
    assert back.signature is not None
    assert back.signature.key_id == key_id(public) == key_id(private)
    assert decode_digest(encode_digest(back)) == back  # the signature is kept

    document = json.loads(signed)
    document["streams"][0]["version"] = 4
    edited = recompute(document)
    assert decode_digest(edited).streams[0].version == 4  # the SHA-256 alone is fooled
    with pytest.raises(InvalidInput, match=r"signature by key \w+ does not hold: the file "
                                           r"was changed after it was signed"):
        decode_digest(edited, public)

    document = json.loads(signed)
    document["taken_at"] = "2031-01-01T00:00:00+00:00"
    with pytest.raises(InvalidInput, match="does not hold"):
        decode_digest(json.dumps(document).encode(), public)

    other = load_public_key(generate_key_pair()[1])
    with pytest.raises(InvalidInput, match=f"signed by key {key_id(public)}, not by the "
                                           f"given key {key_id(other)}"):
        decode_digest(signed, other)
    with pytest.raises(InvalidInput, match="is not signed"):
        decode_digest(encode_digest(DIGEST), public)
    document = json.loads(signed)
    document["signature"]["value"] = "zz" * 64
    with pytest.raises(InvalidInput, match="not hex"):
        decode_digest(json.dumps(document).encode())


def test_keys_refuse_what_is_not_an_ed25519_key_by_name(keys: tuple[bytes, bytes]) -> None:
    """A public key where a private one is needed, garbage, or no PEM at all: named."""
    with pytest.raises(InvalidInput, match=r"^k: is not an Ed25519 private key in PEM"):
        load_private_key(keys[1], "k")
    with pytest.raises(InvalidInput, match="is not a PEM file"):
        load_public_key(b"hello", "k")
    assert key_id(load_public_key(keys[0])) == key_id(load_public_key(keys[1]))


@sqlite_only
def test_a_cut_stream_hidden_by_an_edited_digest_is_caught_by_the_signature(
    own_run: Run, target: BackendTarget, tmp_path: Path, keys: tuple[bytes, bytes],
) -> None:
    """The issue's attack: cut t/a's tail, then edit the digest's head for t/a to the new
    one and recompute the SHA-256. Checking without the key finds no problem with the
    digest (and says its signature went unchecked); `--key` refuses the file, naming the
    signature, exit 2."""
    asyncio.run(build(target))
    private, public = key_files(tmp_path, keys)
    kept = tmp_path / "digest.json"
    written = own_run("digest", "--key", private, "-o", str(kept))
    assert EXIT_OK == written.status, written.err
    assert f"key {key_id(load_public_key(keys[1]))}" in written.out
    asyncio.run(cut_tail(target))
    document = json.loads(kept.read_text())
    found = own_run("log", "--tenant", "t", "--json").json_lines()
    fourth = next(e for e in found if e["stream_id"] == "a" and e["version"] == 4)
    head = next(s for s in document["streams"] if s["stream"] == "a")
    head["version"], head["hash"] = 4, fourth["hash"]
    kept.write_bytes(recompute(document))

    unchecked = own_run("verify", "--digest", str(kept), "--json").json()["digest"]
    assert ([], "unchecked") == (unchecked["problems"], unchecked["signature"])
    refused = own_run("verify", "--digest", str(kept), "--key", public)
    assert EXIT_FINDINGS == refused.status, refused.out
    assert str(kept) in refused.err
    assert "does not hold: the file was changed after it was signed" in refused.err


@sqlite_only
def test_verify_says_whether_the_digest_was_signed_and_checked(
    own_run: Run, target: BackendTarget, tmp_path: Path, keys: tuple[bytes, bytes],
) -> None:
    """Signed and checked: a verdict naming the key. Unsigned: a notice saying what it
    proves. --json carries which; --key without --digest is a usage error."""
    asyncio.run(build(target))
    private, public = key_files(tmp_path, keys)
    signed, unsigned = tmp_path / "signed.json", tmp_path / "unsigned.json"
    assert EXIT_OK == own_run("digest", "--key", private, "-o", str(signed)).status
    assert EXIT_OK == own_run("digest", "-o", str(unsigned)).status
    checked = own_run("verify", "--digest", str(signed), "--key", public)
    assert EXIT_OK == checked.status, checked.err
    assert f"Digest signature by key {key_id(load_public_key(keys[1]))}: ok" in checked.out
    plain = own_run("verify", "--digest", str(unsigned))
    assert EXIT_OK == plain.status
    assert "is unsigned: it proves the log matches the file, not who wrote the file" \
        in " ".join(plain.out.split())
    as_json = own_run("verify", "--digest", str(signed), "--key", public, "--json").json()
    assert ("checked", key_id(load_public_key(keys[1]))) == (
        as_json["digest"]["signature"], as_json["digest"]["signed_by"])
    assert "unsigned" == own_run("verify", "--digest", str(unsigned),
                                 "--json").json()["digest"]["signature"]
    refused = own_run("verify", "--digest", str(unsigned), "--key", public)
    assert EXIT_FINDINGS == refused.status
    assert "is not signed" in refused.err
    lone = own_run("verify", "--key", public)
    assert EXIT_USAGE == lone.status
    assert "give --digest FILE or --head FILE too" in lone.err
    wrong = own_run("digest", "--key", public, "-o", str(tmp_path / "x.json"))
    assert EXIT_USAGE == wrong.status
    assert f"key file {public}: is not an Ed25519 private key" in wrong.err


@sqlite_only
def test_a_digest_covering_none_of_the_scope_is_an_error(
    own_run: Run, target: BackendTarget, tmp_path: Path,
) -> None:
    """`verify --tenant u --digest` of a digest of tenant t would check zero heads: exit 2
    naming the file, the digest's tenant and the scope (it exited 0 silently)."""
    asyncio.run(build(target))
    kept = tmp_path / "t.json"
    assert EXIT_OK == own_run("digest", "--tenant", "t", "-o", str(kept)).status
    refused = own_run("verify", "--tenant", "u", "--digest", str(kept))
    assert EXIT_USAGE == refused.status, refused.out
    assert (f"{kept}: the digest (of tenant 't') holds no stream of tenant 'u': it would "
            "check nothing") in " ".join(refused.err.split())
    assert EXIT_OK == own_run("verify", "--tenant", "t", "--digest", str(kept)).status


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl (.ci/run installs it)")
def test_the_documented_openssl_commands_make_keys_eventlog_reads(tmp_path: Path) -> None:
    """The guide's `openssl genpkey`/`openssl pkey -pubout` files sign and check."""
    private, public = tmp_path / "digest-key.pem", tmp_path / "digest-key.pub.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(private)],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "pkey", "-in", str(private), "-pubout", "-out", str(public)],
                   check=True, capture_output=True)
    signed = encode_digest(DIGEST, load_private_key(private.read_bytes()))
    assert decode_digest(signed, load_public_key(public.read_bytes())).signature is not None
