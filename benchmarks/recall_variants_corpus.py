"""One corpus of benchmarks/recall_variants.py: the scoring re-implemented with variant switches (V).

Issue 18 experiments, not product code: V() reproduces `adr-review eval retrieval`.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from recall_variants_text import TOKS, strip_code

from adr_review.adapters.embeddings import embed_texts
from adr_review.adapters.index_open import ensure_synced, fusion_params, open_index_for
from adr_review.config import RetrievalConfig
from adr_review.core.adr import parse_adr
from adr_review.core.fusion import DocScores, rank
from adr_review.core.lexical import Bm25Params, LexicalIndex, TermCounts
from adr_review.core.recall_query import recall_query
from adr_review.evals.retrieval import load_qrels


@dataclass(frozen=True)
class V:
    query: str = "whole"  # whole | recall | nocode
    doc: str = "text"  # text | title<k> | fields
    tok: str = "search"  # search (the product's) | tokenize (before issue 18) | ident | nohira | kata | ...
    dense: str = "max"  # max | top2 | maxdoc<a>
    prf: tuple = ()  # (k docs, n terms, weight)
    prior: float = 0.0
    k1: float = 1.5
    b: float = 0.75
    dw: float = 0.2
    tw: float = 0.25
    indeg: float = 0.0  # prior: share of pool ADRs citing the candidate (log-scaled)
    neigh: tuple = ()  # (top m, boost): candidates linked with one of the first m get boost*fused(top)
    qtitle: float = 0.0  # bonus: IDF-weighted share of the query's title terms in the candidate's text
    qtitle_in: str = "text"  # text | title
    recency: tuple = ()  # (gamma, half-life in ADRs): bonus for the ADRs just before the newest
    field_w: tuple = ()  # (("decision", 2.0), ...) added section repeats for BM25 doc side


class Corpus:
    def __init__(self, path: Path, store: Path):
        self.name = path.name
        self.index = open_index_for(path, store)
        ensure_synced(self.index, path)
        self.adrs = self.index.adrs
        self.row = {a.path: i for i, a in enumerate(self.adrs)}
        self.mirror = self.index._mirror
        self.qrels = load_qrels(path / "qrels.jsonl")
        known = set(self.row)
        self.qrels = [replace(q, relevant=tuple(r for r in q.relevant if r in known)) for q in self.qrels]
        self.qrels = [q for q in self.qrels if q.relevant]
        self._lex = {}
        import posixpath

        from adr_review.core.adr.names import canonical_id_key as ck

        by_key = {ck(a.adr_id): a.path for a in self.adrs}
        by_base = {posixpath.basename(a.path): a.path for a in self.adrs}
        self.out_links = {}
        for a in self.adrs:
            tgt = set()
            for link in a.links:
                p = by_base.get(posixpath.basename(link.target)) or by_key.get(ck(link.target))
                if p and p != a.path:
                    tgt.add(p)
            self.out_links[a.path] = tgt
        self._qv = {}
        self._qadr = {}

    def qtext(self, q, mode):
        if mode == "whole":
            return q.query_text
        if mode == "nocode":
            return strip_code(q.query_text)
        a = self._qadr.get(q.query) or parse_adr(q.query, q.query_text.encode())
        self._qadr[q.query] = a
        if mode == "recall":
            return recall_query(a)
        if mode == "whole+title":
            return q.query_text + "\n" + a.title
        if mode == "whole+title2":
            return q.query_text + ("\n" + a.title) * 2
        if mode == "whole+recall":
            return q.query_text + "\n" + recall_query(a)
        if mode == "whole+decision":
            return q.query_text + "\n" + a.title + "\n" + a.sections.get("decision", "")
        if mode == "whole-cons":
            t = q.query_text
            for k in ("consequences",):
                s = a.sections.get(k, "")
                if s:
                    t = t.replace(s, " ")
            return t
        raise ValueError(mode)

    def doc_text(self, a, v: V) -> str:
        t = a.text
        if v.doc.startswith("title"):
            k = int(v.doc[5:])
            t = t + ("\n" + a.title) * k
        if v.doc == "nocode":
            t = strip_code(t)
        for sec, w in v.field_w:
            s = a.sections.get(sec, "") if sec != "title" else a.title
            t = t + ("\n" + s) * int(w)
        return t

    def lex(self, v: V):
        key = (v.doc, v.tok, v.k1, v.b, v.field_w)
        if key not in self._lex:
            tok = TOKS[v.tok]
            vocab: dict[str, int] = {}
            offsets, terms, counts = [0], [], []
            for a in self.adrs:
                for term, tf in Counter(tok(self.doc_text(a, v))).items():
                    terms.append(vocab.setdefault(term, len(vocab)))
                    counts.append(tf)
                offsets.append(len(terms))
            tc = TermCounts(
                tuple(vocab),
                np.asarray(offsets, np.int64),
                np.asarray(terms, np.int32),
                np.asarray(counts, np.int32),
            )
            import adr_review.core.lexical as lexical_module

            saved = lexical_module.search_tokens
            lexical_module.search_tokens = tok  # the titles are tokenised when the index is built
            try:
                self._lex[key] = LexicalIndex.from_counts(
                    tc, [a.title for a in self.adrs], Bm25Params(k1=v.k1, b=v.b)
                )
            finally:
                lexical_module.search_tokens = saved
        return self._lex[key]

    def qvec(self, q, mode):
        key = (q.query, mode)
        if key not in self._qv:
            self._qv[key] = embed_texts(self.index._ef, [self.qtext(q, mode)])[0]
        return self._qv[key]

    def qchunks(self, q, mode):
        key = ("qc", q.query, mode)
        if key not in self._qv:
            from adr_review.core.chunking import chunk_text

            a = self._qadr.get(q.query) or parse_adr(q.query, q.query_text.encode())
            self._qadr[q.query] = a
            self._qv[key] = embed_texts(self.index._ef, chunk_text(self.qtext(q, mode), a.title))
        return self._qv[key]

    def dense(self, q, v: V, scope):
        qv = self.qvec(q, v.query)
        m = self.mirror
        cos = m.vectors @ qv
        out = {}
        for i in scope:
            p = self.adrs[i].path
            r = m._row[p]
            c = cos[m.offsets[r] : m.offsets[r + 1]]
            if v.dense == "max":
                out[p] = float(c.max())
            elif v.dense == "top2":
                s = np.sort(c)[::-1]
                out[p] = float(s[:2].mean())
            elif v.dense.startswith("maxdoc"):
                a = float(v.dense[6:])
                vec = m.vectors[m.offsets[r] : m.offsets[r + 1]].astype(np.float64).sum(0)
                vec /= np.linalg.norm(vec) or 1
                out[p] = (1 - a) * float(c.max()) + a * float(vec @ qv)
            elif v.dense.startswith("qc"):
                qm = self.qchunks(q, v.query)
                dm = m.vectors[m.offsets[r] : m.offsets[r + 1]]
                cc = qm @ dm.T
                out[p] = (
                    float(cc.max())
                    if v.dense == "qcmax"
                    else float(cc.max(1).mean())
                    if v.dense == "qcmean"
                    else 0.5 * float(c.max()) + 0.5 * float(cc.max(1).mean())
                )
            elif v.dense.startswith("lses"):
                t = float(v.dense[4:])
                out[p] = float(c.max() + t * np.log(np.sum(np.exp((c - c.max()) / t))))
            elif v.dense.startswith("lse"):
                t = float(v.dense[3:])
                c64 = c.astype(np.float64)
                mx = c64.max()
                out[p] = float(mx + t * np.log(np.mean(np.exp((c64 - mx) / t))))
        return out

    def run(self, v: V):
        params = replace(
            fusion_params(RetrievalConfig(), "offline-hash"), dense_weight=v.dw, title_weight=v.tw
        )
        tok = TOKS[v.tok]
        lex = self.lex(v)
        pairs = []
        for q in self.qrels:
            pool = set(q.pool) if q.pool is not None else None
            scope = [
                i for i, a in enumerate(self.adrs) if a.path != q.query and (pool is None or a.path in pool)
            ]
            if not scope:
                pairs.append(((), q.relevant))
                continue
            qt = self.qtext(q, v.query)
            tokens = tok(qt)
            ls = lex.scores(tokens, scope)
            bm25 = ls.bm25
            if v.prf:
                k, n, w = v.prf
                bm25 = self.prf(lex, tokens, scope, ls, k, n, w)
            dense = self.dense(q, v, scope)
            scores = [
                DocScores(
                    adr=self.adrs[i],
                    dense=dense.get(self.adrs[i].path),
                    bm25=float(bm25[i]),
                    title=float(ls.title[i]),
                )
                for i in scope
            ]
            if v.qtitle:
                a = self._qadr.get(q.query) or parse_adr(q.query, q.query_text.encode())
                self._qadr[q.query] = a
                qt = set(tok(a.title))
                mask = np.zeros(lex.n_docs, bool)
                mask[scope] = True
                df = lex._pool_df(mask, len(scope))
                ids = [
                    (lex.vocab[t], math.log((len(scope) + 1) / (df[lex.vocab[t]] + 0.5)))
                    for t in qt
                    if t in lex.vocab and df[lex.vocab[t]] > 0
                ]
                tot = sum(max(w, 0) for _, w in ids) or 1
                tc = lex._counts
                bon = {}
                for i in scope:
                    if v.qtitle_in == "title":
                        have = set(tok(self.adrs[i].title))
                        bon[i] = sum(max(w, 0) for t, w in ids if tc.vocab[t] in have) / tot
                    else:
                        terms = set(tc.terms[tc.offsets[i] : tc.offsets[i + 1]].tolist())
                        bon[i] = sum(max(w, 0) for t, w in ids if t in terms) / tot
                scores = [
                    replace(s, title=s.title + v.qtitle * bon[i] / params.title_weight)
                    for s, i in zip(scores, scope, strict=True)
                ]
            if v.recency:
                g, hl = v.recency

                def key(i: int) -> tuple[int, str]:
                    a = self.adrs[i]
                    return (a.number if a.number is not None else -1, a.adr_id)

                order = sorted(scope, key=key, reverse=True)
                age = {i: k for k, i in enumerate(order)}
                scores = [
                    replace(s, title=s.title + g * 0.5 ** (age[i] / hl) / params.title_weight)
                    for s, i in zip(scores, scope, strict=True)
                ]
            if v.indeg or v.neigh:
                scores = self.graph(scores, scope, q, v, params)
            r = rank(scores, params)
            ranked = [c.adr.path for c in r.candidates]
            if v.prior:
                fused = {c.adr.path: c.fused for c in r.candidates}
                ranked.sort(
                    key=lambda p: (
                        -(
                            fused[p]
                            + (
                                v.prior
                                if self.adrs[self.row[p]].status in ("superseded", "deprecated")
                                else 0
                            )
                        )
                    )
                )
            pairs.append((ranked, q.relevant))
        return pairs

    def graph(self, scores, scope, q, v, params):
        from adr_review.core.fusion import fuse

        paths = {self.adrs[i].path for i in scope}
        indeg = Counter()
        for p in paths:
            for t in self.out_links[p]:
                if t in paths:
                    indeg[t] += 1
        fused = fuse(scores, params)
        bonus = Counter()
        if v.indeg:
            mx = max(indeg.values(), default=0)
            if mx:
                for p, n in indeg.items():
                    bonus[p] += v.indeg * math.log1p(n) / math.log1p(mx)
        if v.neigh:
            m, boost = v.neigh
            for c in fused[:m]:
                for t in self.out_links[c.adr.path] | {p for p in paths if c.adr.path in self.out_links[p]}:
                    if t in paths and t != c.adr.path:
                        bonus[t] = max(bonus[t], boost * c.fused / (fused[0].fused or 1))
        self._bonus = bonus
        # fold the bonus in as a title-coverage-like additive term via bm25 is messy: re-rank after fuse
        return [
            s
            if not bonus.get(s.adr.path)
            else replace(s, title=s.title + bonus[s.adr.path] / params.title_weight)
            for s in scores
        ]

    def prf(self, lex, tokens, scope, ls, k, n, w):
        # RM3-ish: top-k docs by bm25, take terms weighted by tf/dl * idf, add n terms with weight w
        top = np.argsort(-ls.bm25)[:k]
        tc = lex._counts
        mask = np.zeros(lex.n_docs, bool)
        mask[scope] = True
        weights: Counter = Counter()
        ndocs = len(scope)
        df = lex._pool_df(mask, ndocs)
        for d in top:
            if ls.bm25[d] <= 0:
                continue
            lo, hi = tc.offsets[d], tc.offsets[d + 1]
            ids, cnt = tc.terms[lo:hi], tc.counts[lo:hi]
            dl = cnt.sum()
            for t, c in zip(ids.tolist(), cnt.tolist(), strict=True):
                idf = math.log((ndocs + 1) / (df[t] + 0.5))
                if df[t] < 2 or idf <= 0:
                    continue
                weights[tc.vocab[t]] += (c / dl) * idf
        qset = set(tokens)
        exp = [t for t, _ in weights.most_common(n * 3) if t not in qset][:n]
        base = ls.bm25
        if not exp:
            return base
        e = lex.scores(exp, scope).bm25
        ntok = len(tokens)
        # weight relative to the original query's length
        return base + w * e * (ntok / max(len(exp), 1)) / 10
