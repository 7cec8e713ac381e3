"""The EXAMPLES section of each command's ``--help``, kept in one place.

Every example here is a command line a test parses (tests/cli/test_help.py), so a renamed
option cannot leave a stale example behind.
"""

from __future__ import annotations

EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "demo": (
        ("eventlog demo", "play the story on ./eventlog.db and write its report"),
        ("eventlog demo --url postgresql://me@db/test --schema demo", "on PostgreSQL"),
    ),
    "migrate": (
        ("eventlog migrate --url postgresql://me@db/prod", "create or upgrade the schema"),
    ),
    "stats": (("eventlog stats --tenant acme", "one tenant's counts"),),
    "consumers": (("eventlog consumers --json", "every consumer, its lag and holder"),
                  ("eventlog consumers reset billing --to beginning", "replay a projection")),
    "cleanup": (("eventlog cleanup --limit 50", "one bounded maintenance pass"),),
    "retention": (
        ("eventlog retention apply acme --older-than 180 --dry-run",
         "what a 180-day policy would purge"),
        ("eventlog retention apply acme --keep-latest 10 --older-than 30",
         "keep 30 days and the latest 10"),
        ("eventlog retention apply --policy retention.toml --json", "many tenants at once"),
    ),
    "hold": (
        ("eventlog hold acme case-42 --reason 'litigation 2031-17'", "never purge case-42"),
        ("eventlog hold --release acme case-42", "release the hold"),
        ("eventlog hold --list acme", "the standing holds"),
    ),
    "log": (
        ("eventlog log --tenant acme --session trip-1", "one session's events"),
        ("eventlog log --since 14:00 --until '10m ago'", "a time window (UTC)"),
        ("eventlog log --follow --type interrupt.effect_started", "tail the dispatches"),
        ("eventlog log --from-position 120 --limit 5 --full", "five events, every field"),
    ),
    "serve": (
        ("eventlog serve", "the console on http://127.0.0.1:8421, a token printed"),
        ("eventlog serve --url postgresql://me@db/prod --tokens tokens.toml",
         "each analyst sees their tenants"),
    ),
    "timeline": (("eventlog timeline acme trip-1", "the session's story"),
                 ("eventlog timeline acme trip-1 --scan", "also batches retired from the "
                                                          "views")),
    "inspect": (("eventlog inspect acme 0b0e8c1e-4a4f-4a57-9d0c-2c6f2a9e1d3b",
                 "one batch and its audit trail"),),
    "replay": (
        ("eventlog replay --as-of 14:02 --tenant acme --session trip-1",
         "what the operator saw at 14:02 today (UTC)"),
        ("eventlog replay --as-of 120 --table interrupt_batches", "as of a position"),
    ),
    "report": (
        ("eventlog report acme trip-1", "write eventlog-report-acme-trip-1.html"),
        ("eventlog report acme --as-of '2h ago' -o before.html", "the tenant two hours ago"),
    ),
    "verify": (("eventlog verify && echo intact", "every chain and view"),
               ("eventlog verify --tenant acme --json", "for scripts"),
               ("eventlog verify --writer-key writer.pub",
                "also every event's writer signature, with the public key alone"),
               ("eventlog verify --digest heads-2026-11-30.json",
                "also: nothing cut, dropped or rewritten since that digest"),
               ("eventlog verify --head acme-head.txt --key op.pub.pem",
                "also: the log still gives that signed tree head")),
    "digest": (("eventlog digest -o heads-2026-11-30.json",
                "every stream's head, to keep outside the database"),),
    "tree-head": (("eventlog tree-head acme --key op.pem --name example.org/eventlog "
                   "-o acme-head.txt", "sign the head of tenant acme's tree"),),
    "prove": (("eventlog prove acme 01a23a88-3853-7a54-8e97-51159832f003 --head acme-head.txt "
               "-o proof.json", "one event is under that head"),
              ("eventlog prove acme --from old-head.txt --head acme-head.txt -o growth.json",
               "the newer tree extends the older one")),
    "check-proof": (("eventlog check-proof proof.json --head acme-head.txt --key op.pub.pem",
                     "the auditor's check: no database"),
                    ("eventlog check-proof proof.json --head cosigned.txt --key op.pub.pem "
                     "--witness-key w1.pub.pem", "and require the witness's cosignature")),
    "witness": (("eventlog witness --head acme-head.txt --state ./witness --key op.pub.pem "
                 "--proof growth.json", "accept a newer head only if it extends the kept one"),
                ("eventlog witness --head acme-head.txt --state ./witness --key op.pub.pem "
                 "--witness-key w1.pem --name witness.example.org/w1 -o cosigned.txt",
                 "and cosign it (C2SP tlog-cosignature)")),
    "verifier-key": (("eventlog verifier-key acme --key op.pub.pem --name example.org/eventlog",
                      "example.org/eventlog/acme+HASH+BASE64: what note.Open checks with"),),
    "tree-rebuild": (("eventlog tree-rebuild acme --head acme-head.txt --key op.pub.pem",
                      "repair the tree; refused if the log no longer gives that head"),),
    "export": (("eventlog export --tenant acme acme.jsonl", "a tenant to a file"),
               ("eventlog export --tenant acme --session trip-1 -", "one session to stdout"),
               ("eventlog export langgraph sqlite:///langgraph.db --tenant acme",
                "the tenant's LangGraph threads into LangGraph's SqliteSaver"),
               ("eventlog export maf ./checkpoints --tenant acme",
                "its Agent Framework workflows into a FileCheckpointStorage directory")),
    "adopt": (("eventlog adopt langgraph postgresql://me@db/app --tenant acme --dry-run",
               "what PostgresSaver's threads would bring in"),
              ("eventlog adopt langgraph sqlite:///langgraph.db --tenant acme --thread t-1",
               "one SqliteSaver thread"),
              ("eventlog adopt maf ./checkpoints --tenant acme",
               "every workflow of an Agent Framework FileCheckpointStorage")),
    "import": (("eventlog import --url sqlite:///incident.db acme.jsonl",
                "into a local file (created when new)"),),
    "completion": (("eventlog completion bash", "print the bash script (eval it in ~/.bashrc)"),
                   ("eventlog completion fish", "the fish script")),
    "keys": (("eventlog keys init keyring.json",
              "make a keyring: a KEK and a writer key (0600; never printed)"),
             ("eventlog keys public keyring.json -o writer.pub",
              "the writer's public keys, for auditors (verify --writer-key)"),
             ("eventlog keys rotate --keyring old.json --to new.json",
              "re-wrap every data key under the new keyring")),
    "erase": (("eventlog erase acme customer-7 --reason 'GDPR art. 17 request 42'",
               "destroy the subject's data key and record why"),),
}
"""Per command: (command line, what it does)."""


def examples_help(command: str) -> str:
    """The EXAMPLES section for ``command`` (empty when it has none)."""
    lines = EXAMPLES.get(command, ())
    if not lines:
        return ""
    width = max(len(line) for line, _what in lines)
    body = "\n".join(f"  {line.ljust(width)}  # {what}" for line, what in lines)
    return f"examples:\n{body}\n\n"
