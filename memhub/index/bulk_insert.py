"""A columnar insert: one list per field sent as pymilvus's own batch insert builds it, not one dict per row.

``MilvusClient.insert`` takes rows as dicts and packs them into the request's columns one cell at a time, with
per-cell type checks: a fifth of ``memhub reindex``'s fill went there (py-spy, bench/bench_fill.py). The rows are
already checked (memhub/index/rows.py ``to_columns``), so the columns go to ``GrpcHandler.batch_insert``, the
path of pymilvus's ``Collection.insert`` with column data, which validates them as a whole. pymilvus internals used
here (``_get_connection``, ``_generate_call_context``, ``_get_schema``) are those of the pinned 2.6 line, as in
raw_search.py; tests/test_index_bulk_insert.py compares what this writes with ``MilvusClient.insert`` on a real
Milvus Lite, so an upgrade that moves them fails there first.
"""

from __future__ import annotations

from typing import Any

from pymilvus import MilvusClient


def insert_columns(client: MilvusClient, collection: str, columns: dict[str, list[Any]], timeout: float) -> int:
    """Insert the rows ``columns`` holds (field name -> one value per row, every input field of the collection);
    returns how many rows were inserted. Raises what ``client.insert`` would (``MilvusException``, ``grpc.RpcError``)."""
    if not columns:
        return 0
    handler = client._get_connection()  # noqa: SLF001 - see the module docstring
    context = client._generate_call_context()  # noqa: SLF001
    schema, _ = handler._get_schema(collection, timeout=timeout, context=context)  # noqa: SLF001
    types = {f["name"]: f["type"] for f in schema["fields"]}
    unknown = sorted(set(columns) - set(types))
    if unknown:
        raise ValueError(f"collection {collection!r} has no field {unknown[0]!r}")
    entities = [{"name": name, "type": types[name], "values": values} for name, values in columns.items()]
    result = handler.batch_insert(collection, entities, schema=schema, timeout=timeout, context=context)
    return int(result.insert_count)
