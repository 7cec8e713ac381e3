"""Nothing crafted crashes a tool (issue 42 §4): a proof or an export made to break the
parser gets one line naming the file and what is wrong, and exit 2 (it was exit 3,
"unexpected RecursionError / ValueError / UnicodeDecodeError")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eventlog.cli import EXIT_USAGE
from tests.cli.test_errors import run_bare

DEEP = 1_000_000


@pytest.mark.parametrize(("proof", "said"), [
    ('{"type": "eventlog.inclusion_proof/v1", "tree_size": ' + "9" * 5000 + "}",
     "is not a proof: it holds a number thousands of digits long"),
    ("[" * DEEP + "]" * DEEP, "is not a proof: its JSON is nested deeper than a proof's"),
], ids=["5000 digits", "nested a million deep"])
def test_check_proof_refuses_a_crafted_proof_in_one_line(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, proof: str, said: str) -> None:
    """The proof file is refused before any head or key is looked at."""
    (tmp_path / "proof.json").write_text(proof)
    ran = run_bare(capsys, "check-proof", str(tmp_path / "proof.json"), "--head",
                   str(tmp_path / "none.txt"), "--key", str(tmp_path / "none.pem"))
    assert (EXIT_USAGE, 1, True) == (ran.status, len(ran.err.splitlines()), said in ran.err)


def test_a_proofs_sizes_are_bounded_as_a_checkpoints() -> None:
    """A tree size or leaf index past 2**64 - 1 (what a checkpoint's size line holds) is
    bad input, never fed to the tree maths."""
    from eventlog import notes, proofs
    from eventlog.errors import InvalidInput
    from eventlog.signing import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    origin = notes.origin_for("example.org/log", "t")
    head = proofs.open_head(notes.sign_checkpoint(notes.Checkpoint(origin, 1, bytes(32)),
                                                  origin, key), key.public_key())
    with pytest.raises(InvalidInput, match=r"tree_size must be a whole number from 0 to 2\*\*64"):
        proofs.check_inclusion({"type": proofs.INCLUSION, "tree_size": 1 << 64}, head)


HEADER = json.dumps({"format": "checkpoint-eventlog/export", "version": 1, "tenant": "t",
                     "session": None, "with_state": True, "exported_at":
                     "2030-01-01T00:00:00+00:00", "source": "sqlite"}).encode() + b"\n"


@pytest.mark.parametrize(("content", "said"), [
    (b"[" * DEEP + b"]" * DEEP + b"\n", "line 1: nested deeper than any export record"),
    (HEADER + b'{"kind": "event", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
     "line 2: nested deeper than any export record"),
    (HEADER + b'{"kind": "event", "stream": "\xff\xfe"}\n',
     "line 2: not UTF-8 text"),
], ids=["deep first line", "deep event line", "non-UTF-8 line"])
def test_import_refuses_a_crafted_file_in_one_line(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, said: str) -> None:
    """Refused while the file is checked, before the target is opened: no database."""
    (tmp_path / "x.jsonl").write_bytes(content)
    target = tmp_path / "target.db"
    ran = run_bare(capsys, "import", str(tmp_path / "x.jsonl"), "--url", f"sqlite:///{target}")
    assert (EXIT_USAGE, 1, True, False) == (
        ran.status, len(ran.err.splitlines()), said in ran.err, target.exists())
