"""What `memhub import` did, counted from the hub's write results: what was stored, and why the rest was not.

A line of the file can end five ways, and the write results say which
(memhub/v1 WriteResult, WriteMemoriesResponse): stored as a new memory
(possibly replacing the older memory of its subject key), folded into the
same text already stored (an exact duplicate), folded into the same words
in other case or punctuation (a near duplicate), dropped by the write filter
(small talk, chatter), or not written at all because its batch was already
imported by an earlier run: batches carry request ids derived from the
file's hash, and the hub answers a repeated request id with the first
answer (`replayed`) instead of writing again. Counting only `deduplicated`
made a second import of a file report "0 already stored" while storing
nothing: a replay's results describe the first run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from memhub.v1 import memory_pb2 as pb


@dataclass
class ImportTally:
    """Counts of lines by outcome; every line of a batch lands in exactly one of the first five."""

    stored: int = 0
    """New memories written by this run."""
    exact_duplicates: int = 0
    """The same text was already stored in its namespace (or earlier in the file): nothing new was written."""
    near_duplicates: int = 0
    """The same words in other case, punctuation or filler words were already stored: folded into that memory."""
    filtered: int = 0
    """Dropped by the hub's write filter (small talk, chatter, too short): nothing was stored."""
    already_imported: int = 0
    """In a batch an earlier run of this file already wrote (its request id was replayed): nothing written again."""
    replaced: int = 0
    """Of `stored`: memories that superseded the older memory of their subject key (kept as history)."""
    extracted: int = 0
    """Facts the hub's LLM extractor (MEMHUB_EXTRACTOR=llm) drew from stored lines and stored beside them."""

    def add(self, reply: pb.WriteMemoriesResponse, *, ours: bool = False) -> None:
        """Count one batch's answer; ``ours``: a replay answers an earlier attempt of this run (import_retry.py)."""
        if reply.replayed and not ours:
            self.already_imported += len(reply.results)
            return
        for result in reply.results:
            if result.filtered:
                self.filtered += 1
            elif result.deduplicated and result.near:
                self.near_duplicates += 1
            elif result.deduplicated:
                self.exact_duplicates += 1
            else:
                self.stored += 1
                self.replaced += result.HasField("replaced")
            self.extracted += sum(not fact.deduplicated for fact in result.extracted)

    @property
    def lines(self) -> int:
        return self.stored + self.exact_duplicates + self.near_duplicates + self.filtered + self.already_imported

    def as_dict(self) -> dict[str, int]:
        return {"lines": self.lines, **asdict(self)}

    def summary(self) -> str:
        """One sentence: 'imported 201 lines: 0 new memories stored; 201 already imported by an earlier run ...'."""
        stored = f"{self.stored} new {'memory' if self.stored == 1 else 'memories'} stored"
        if self.replaced:
            stored += f" ({self.replaced} replacing the older memory of their subject key)"
        rest = [
            (self.exact_duplicates, "already stored with the same text"),
            (self.near_duplicates, "already stored in other words (near duplicates, folded into those memories)"),
            (self.filtered, "dropped by the write filter as small talk or chatter"),
            (self.already_imported, "already imported by an earlier run of this file (nothing written again)"),
        ]
        parts = [stored, *(f"{count} {what}" for count, what in rest if count)]
        line = f"imported {self.lines} line{'' if self.lines == 1 else 's'}: " + "; ".join(parts)
        if self.extracted:
            line += f"; the hub's extractor kept {self.extracted} more fact{'' if self.extracted == 1 else 's'} from them"
        return line
