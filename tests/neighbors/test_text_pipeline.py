"""A text pipeline with empty documents: gbdist's KNeighborsTransformer(metric="cosine")
feeding DBSCAN and TSNE on precomputed distances, against scikit-learn's own pipeline.

An empty document is a zero row of the TF-IDF matrix. scikit-learn's cosine normalises
it to the zero vector (distance 1 to every document); gbdist's scikit-learn-shaped
estimators follow it (``cosine_sklearn``), so no NaN reaches DBSCAN or TSNE."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.cluster import DBSCAN
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.manifold import TSNE
from sklearn.neighbors import KNeighborsTransformer as SkKNeighborsTransformer
from sklearn.pipeline import make_pipeline

import gbdist as gb

WORDS = ("graph sparse matrix semiring distance neighbour cluster kernel metric vector "
         "algebra product row column norm cosine text document word model").split()


def _documents(n=40, seed=0):
    rng = np.random.default_rng(seed)
    docs = [" ".join(rng.choice(WORDS, size=rng.integers(3, 9))) for _ in range(n)]
    for i in (3, 17, 29):
        docs[i] = ""  # empty documents: zero rows
    return docs


def _graph(transformer, X):
    return transformer.fit_transform(X).tocsr()


@pytest.fixture(scope="module")
def tfidf():
    return TfidfVectorizer().fit_transform(_documents())


def test_neighbour_graph_matches_scikit_learns(tfidf):
    ours = _graph(gb.KNeighborsTransformer(metric="cosine", n_neighbors=7, backend="cpu"), tfidf)
    theirs = _graph(SkKNeighborsTransformer(metric="cosine", n_neighbors=7), tfidf)
    assert ours.shape == theirs.shape and np.isfinite(ours.data).all()
    for i in range(tfidf.shape[0]):
        a = np.sort(ours.data[ours.indptr[i]:ours.indptr[i + 1]])
        b = np.sort(theirs.data[theirs.indptr[i]:theirs.indptr[i + 1]])
        np.testing.assert_allclose(a, b, atol=1e-6)
        # the neighbours closer than 1 (a shared word) are the same documents; those at
        # exactly 1 are ties, which either library may pick
        near = lambda g: set(g.indices[g.indptr[i]:g.indptr[i + 1]][
            g.data[g.indptr[i]:g.indptr[i + 1]] < 1 - 1e-6])
        assert near(ours) == near(theirs)
    # an empty document is at distance 1 from every other, as in scikit-learn
    row = ours[3].toarray().ravel()
    assert set(np.round(row[row > 0], 12)) <= {1.0}


def test_dbscan_and_tsne_on_the_graph(tfidf):
    def pipeline(transformer, step):
        return make_pipeline(transformer, step).fit(tfidf)

    def dbscan():
        return DBSCAN(metric="precomputed", eps=0.6, min_samples=2)

    ours = pipeline(gb.KNeighborsTransformer(metric="cosine", n_neighbors=7, backend="cpu"),
                    dbscan())[-1].labels_
    theirs = pipeline(SkKNeighborsTransformer(metric="cosine", n_neighbors=7),
                      dbscan())[-1].labels_
    np.testing.assert_array_equal(ours, theirs)
    tsne = TSNE(metric="precomputed", init="random", perplexity=2, max_iter=250, random_state=0)
    emb = make_pipeline(gb.KNeighborsTransformer(metric="cosine", n_neighbors=7, backend="cpu"),
                        tsne).fit_transform(tfidf)
    assert emb.shape == (tfidf.shape[0], 2) and np.isfinite(emb).all()
