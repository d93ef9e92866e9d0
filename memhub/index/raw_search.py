"""A Milvus search sent as pymilvus sends it, its reply read column by column straight from the protobuf.

pymilvus's ``MilvusClient.search`` turns each reply into a ``SearchResult`` of
``Hit`` objects, one dict per hit with its output fields decoded one cell at a
time. At 16 concurrent searches over 10k memories that parsing was a tenth of
the hub's Python time (py-spy, bench/bench_throughput.py), and the hub then
took the dicts apart again. Here the request is built by pymilvus's own
``Prepare`` (so filters, consistency and placeholders stay exactly as pymilvus
makes them) and sent on its channel; the reply's ids, scores and string output
fields are taken as the lists the protobuf holds.

Only what the hub asks for is read: string (VARCHAR) output fields. pymilvus's
internals used here (``_get_connection``, ``_stub``, ``Prepare``,
``construct_guarantee_ts``) are those of the pinned 2.6 line;
tests/test_raw_search.py compares this reader with ``MilvusClient.search`` on a
real Milvus Lite so a pymilvus upgrade that moves them fails there first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pymilvus import MilvusClient
from pymilvus.client import ts_utils
from pymilvus.client.call_context import _api_level_md
from pymilvus.client.prepare import Prepare
from pymilvus.client.utils import check_status
from pymilvus.exceptions import MilvusException


@dataclass(frozen=True)
class Found:
    """One query's hits, best first, as columns: ids, Milvus's scores and the requested string fields."""

    ids: list[str]
    scores: list[float]
    fields: dict[str, list[str]]

    def __len__(self) -> int:
        return len(self.ids)


def search(
    client: MilvusClient,
    collection: str,
    *,
    data: Sequence[Any],
    anns_field: str,
    expr: str,
    limit: int,
    output_fields: Sequence[str],
    search_params: dict[str, Any] | None,
    consistency_level: str,
    timeout: float,
) -> list[Found]:
    """What ``client.search`` would return for these arguments, one ``Found`` per query in ``data``.

    Raises what the pymilvus call would: ``MilvusException`` for a refusal, ``grpc.RpcError`` for a transport
    failure (memhub/index/failures.py translates both).
    """
    handler = client._get_connection()  # noqa: SLF001 - see the module docstring
    context = client._generate_call_context()  # noqa: SLF001
    kwargs: dict[str, Any] = {"consistency_level": consistency_level}
    use_default = ts_utils.construct_guarantee_ts(collection, kwargs, handler.server_address, context.get_db_name())
    if data and isinstance(data[0], bytes):  # binary vectors: pymilvus needs the schema to place them
        kwargs["schema"], _ = handler._get_schema(collection, timeout=timeout, context=context)  # noqa: SLF001
    request = Prepare.search_requests_with_expr(
        collection_name=collection,
        anns_field=anns_field,
        param=search_params or {},
        limit=limit,
        data=list(data),
        ids=None,
        expr=expr,
        partition_names=None,
        output_fields=list(output_fields),
        round_decimal=-1,
        ranker=None,
        highlighter=None,
        use_default_consistency=use_default,
        expr_params={},
        **kwargs,
    )
    response = handler._stub.Search(request, timeout=timeout, metadata=_api_level_md(context))  # noqa: SLF001
    if response is None:
        raise MilvusException(message="Received None response from server during search")
    check_status(response.status)
    return columns(response.results, len(data), output_fields)


def columns(results: Any, queries: int, output_fields: Sequence[str]) -> list[Found]:
    """A ``SearchResultData`` message as one ``Found`` per query (queries past the reply's answer get none)."""
    id_field = results.ids.WhichOneof("id_field")
    if id_field == "str_id":
        ids: list[str] = list(results.ids.str_id.data)
    elif id_field == "int_id":
        ids = [str(i) for i in results.ids.int_id.data]
    else:
        ids = []
    scores = list(results.scores)
    by_name = {f.field_name: f for f in results.fields_data}
    fields: dict[str, list[str]] = {}
    for name in output_fields:
        field = by_name.get(name)
        if field is None and not ids:  # a search that found nothing carries no field data at all
            fields[name] = []
            continue
        if field is None or field.WhichOneof("field") != "scalars" or field.scalars.WhichOneof("data") != "string_data":
            raise MilvusException(message=f"the search reply has no string field {name!r}")
        fields[name] = list(field.scalars.string_data.data)
    out: list[Found] = []
    start = 0
    for n in list(results.topks)[:queries]:
        end = start + int(n)
        out.append(Found(ids[start:end], scores[start:end], {k: v[start:end] for k, v in fields.items()}))
        start = end
    return out + [Found([], [], {k: [] for k in fields}) for _ in range(queries - len(out))]
