"""Search, one stage per module, in the order they run (memhub/search/pipeline.py runs them):

1. understand the query: its terms, names, entities and time window, and what the request asks of the
   other stages (query.py; query_terms.py, timeparse.py, relevance.py's Judge; memhub/recall/entities.py),
   and start its embedding (query_vector.py);
2. gather candidates per channel: dense and keyword in Milvus, entity in Postgres, full-text in Postgres
   while the index is down (channels.py; memhub/db/entity_search.py, memhub/db/fulltext.py);
3. fuse them by weighted Reciprocal Rank Fusion (fusion.py);
4. the time channel: candidates inside the time the query names (time_channel.py);
5. expansion, a second round seeded by the best hits (expansion.py);
6. neighbour smoothing (smoothing.py);
7. hydrate the candidates from Postgres, the truth (hydration.py);
8. apply the priors: importance, recency, use, type (priors.py);
9. rerank (reranking.py; memhub/rerank), then move the turns of speakers other than the question's subject down
   (speakers.py);
10. judge relevance and drop the hits below min_relevance (judging.py, relevance.py);
11. fit the token budget (budget.py);
12. attach context turns (context_turns.py);
13. fit the response's byte budget (budget.py; memhub/core/response_size.py);
14. log: recall counts and the retrieval log (recording.py).

The caller's rights are decided before stage 2 by the use case (memhub/service/search.py), on the
search's own connection; every stage after works only within the namespaces they allow.
"""
