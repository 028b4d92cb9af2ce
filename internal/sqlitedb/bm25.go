//go:build cgo && (sqlite_fts5 || fts5)

package sqlitedb

/*
#include <math.h>
#include <string.h>
#include <sqlite3.h>

// mnemo_bm25(fts, counts) is FTS5's bm25() with the document frequencies
// supplied: counts is a BLOB of one little-endian int64 per phrase of the
// query, the number of rows matching that phrase alone. bm25() counts them
// itself, reading every phrase's whole doclist once per statement, which
// was most of the cost of scoring a few rows. The arithmetic is bm25()'s,
// operation for operation (SQLite 3.50, fts5Bm25GetData and
// fts5Bm25Function): k1 = 1.2, b = 0.75, every column weight 1, and so the
// scores are bm25()'s exactly when the counts are right. A negative count
// leaves its phrase out of the score: a query can then repeat terms to
// filter rows (("rare") AND ("rare" OR "common")) and still score as the
// query of its other phrases. Without a BLOB of the right size the
// function counts like bm25() does.
//
// mnemo_bm25(fts, counts, lengths) also takes the rows' lengths in tokens
// (what xColumnSize(-1) reads from the %_docsize table, one B-tree lookup
// per row, which was half of the cost of ranking): a BLOB of one
// little-endian uint16 per rowid, 0xFFFF for a length not given; rows past
// its end or not given are looked up as bm25() does. NULL stands for no
// lengths.
//
// mnemo_bm25(fts, counts, lengths, stats) scores the first column alone
// against statistics the caller keeps (one tenant's, say, in a table that
// holds several): stats is a BLOB of two little-endian int64, the number
// of rows and their total length in tokens of the first column; counts
// must then be taken over the same rows, and lengths, if given, are the
// first column's. The row's length D is its first column's, and only the
// phrases' hits in that column count: the other columns filter rows.

typedef struct {
	int nPhrase;
	int firstColumn; // stats given: score column 0 alone
	double avgdl;
	double *aIDF;
	double *aFreq;
} mnemoBm25Data;

// mnemoInt64 reads the i-th little-endian int64 of a BLOB.
static sqlite3_int64 mnemoInt64(const unsigned char *b, int i) {
	sqlite3_uint64 v = 0;
	for (int j = 7; j >= 0; j--) v = (v << 8) | b[i * 8 + j];
	return (sqlite3_int64)v;
}

static int mnemoCountCb(const Fts5ExtensionApi *api, Fts5Context *fts, void *user) {
	(*(sqlite3_int64 *)user)++;
	return SQLITE_OK;
}

static int mnemoBm25GetData(const Fts5ExtensionApi *api, Fts5Context *fts, int nVal, sqlite3_value **apVal, mnemoBm25Data **out) {
	mnemoBm25Data *p = (mnemoBm25Data *)api->xGetAuxdata(fts, 0);
	if (p) {
		*out = p;
		return SQLITE_OK;
	}
	int rc = SQLITE_OK;
	int nPhrase = api->xPhraseCount(fts);
	p = (mnemoBm25Data *)sqlite3_malloc64(sizeof(mnemoBm25Data) + (sqlite3_int64)nPhrase * 2 * sizeof(double));
	if (!p) return SQLITE_NOMEM;
	memset(p, 0, sizeof(mnemoBm25Data) + (size_t)nPhrase * 2 * sizeof(double));
	p->nPhrase = nPhrase;
	p->aIDF = (double *)&p[1];
	p->aFreq = &p->aIDF[nPhrase];
	sqlite3_int64 nRow = 0, nToken = 0;
	if (nVal >= 3 && sqlite3_value_type(apVal[2]) == SQLITE_BLOB && sqlite3_value_bytes(apVal[2]) == 16) {
		const unsigned char *st = (const unsigned char *)sqlite3_value_blob(apVal[2]);
		nRow = mnemoInt64(st, 0);
		nToken = mnemoInt64(st, 1);
		p->firstColumn = 1;
	} else {
		rc = api->xRowCount(fts, &nRow);
		if (rc == SQLITE_OK) rc = api->xColumnTotalSize(fts, -1, &nToken);
	}
	if (rc == SQLITE_OK) p->avgdl = (double)nToken / (double)nRow;
	const unsigned char *counts = 0;
	if (nVal >= 1 && sqlite3_value_type(apVal[0]) == SQLITE_BLOB && sqlite3_value_bytes(apVal[0]) == nPhrase * 8) {
		counts = (const unsigned char *)sqlite3_value_blob(apVal[0]);
	}
	if (p->firstColumn && !counts) {
		// Counting here would count over the whole table, not over the
		// rows the stats describe.
		sqlite3_free(p);
		return SQLITE_MISMATCH;
	}
	for (int i = 0; rc == SQLITE_OK && i < nPhrase; i++) {
		sqlite3_int64 nHit = 0;
		if (counts) {
			nHit = mnemoInt64(counts, i);
			if (nHit < 0) {
				p->aIDF[i] = 0.0; // not scored: adds exactly +0.0 to every row
				continue;
			}
		} else {
			rc = api->xQueryPhrase(fts, i, (void *)&nHit, mnemoCountCb);
		}
		if (rc == SQLITE_OK) {
			double idf = log((nRow - nHit + 0.5) / (nHit + 0.5));
			if (idf <= 0.0) idf = 1e-6;
			p->aIDF[i] = idf;
		}
	}
	if (rc != SQLITE_OK) {
		sqlite3_free(p);
		return rc;
	}
	rc = api->xSetAuxdata(fts, p, sqlite3_free);
	if (rc != SQLITE_OK) return rc;
	*out = p;
	return SQLITE_OK;
}

static void mnemoBm25(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int nVal, sqlite3_value **apVal) {
	const double k1 = 1.2;
	const double b = 0.75;
	double score = 0.0;
	double D = 0.0;
	mnemoBm25Data *p = 0;
	int rc = mnemoBm25GetData(api, fts, nVal, apVal, &p);
	// Each scored phrase's hits are counted on its own position list.
	// bm25() asks for the row's instances instead (xInstCount), which
	// merges every phrase's list into one array ordered by position, the
	// filter phrases' too: the same counts, at more cost per row.
	for (int i = 0; rc == SQLITE_OK && i < p->nPhrase; i++) {
		p->aFreq[i] = 0.0;
		if (p->aIDF[i] == 0.0) continue; // a filter phrase
		Fts5PhraseIter it;
		int iCol = 0, iOff = 0;
		rc = api->xPhraseFirst(fts, i, &it, &iCol, &iOff);
		for (; rc == SQLITE_OK && iCol >= 0; api->xPhraseNext(fts, &it, &iCol, &iOff)) {
			if (!p->firstColumn || iCol == 0) p->aFreq[i] += 1.0;
		}
	}
	if (rc == SQLITE_OK) {
		int nTok = -1;
		if (nVal >= 2 && sqlite3_value_type(apVal[1]) == SQLITE_BLOB) {
			sqlite3_int64 rowid = api->xRowid(fts);
			if (rowid >= 0 && rowid < sqlite3_value_bytes(apVal[1]) / 2) {
				const unsigned char *len = (const unsigned char *)sqlite3_value_blob(apVal[1]);
				int v = len[2 * rowid] | (len[2 * rowid + 1] << 8);
				if (v != 0xFFFF) nTok = v;
			}
		}
		if (nTok < 0) rc = api->xColumnSize(fts, p->firstColumn ? 0 : -1, &nTok);
		D = (double)nTok;
	}
	if (rc == SQLITE_MISMATCH) {
		sqlite3_result_error(ctx, "mnemo_bm25: with stats, counts must hold one int64 per phrase of the query", -1);
		return;
	}
	if (rc != SQLITE_OK) {
		sqlite3_result_error_code(ctx, rc);
		return;
	}
	for (int i = 0; i < p->nPhrase; i++) {
		score += p->aIDF[i] * ((p->aFreq[i] * (k1 + 1.0)) / (p->aFreq[i] + k1 * (1 - b + b * D / p->avgdl)));
	}
	sqlite3_result_double(ctx, -1.0 * score);
}

// mnemo_bm25_text(content, terms, counts, stats, all) scores one row's
// text as mnemo_bm25(fts, counts, lengths, stats) scores it inside an FTS5
// query of terms, without the query: the text is tokenized with the
// table's tokenizer ('porter unicode61'), each term (terms: a BLOB of
// NUL-separated strings, each a phrase) counted at consecutive positions,
// the length taken as FTS5 takes it, the number of rows and their total
// length from stats (two little-endian int64). It returns NULL when the
// text does not match: a phrase without a token is left out of the query,
// as FTS5 leaves it out; all=1 wants every other phrase, else one. Scoring
// a few rows this way reads their text instead of every term's whole list
// of matches.

#define MNEMO_MAX_TOKEN 32768 // FTS5_MAX_TOKEN_SIZE

typedef struct {
	char *buf; // tokens, one after another
	int *off, *len;
	int n, cap, bufLen, bufCap;
} mnemoTokens;

static void mnemoTokensFree(mnemoTokens *t) {
	sqlite3_free(t->buf);
	sqlite3_free(t->off);
	sqlite3_free(t->len);
	memset(t, 0, sizeof(*t));
}

static int mnemoTokenCb(void *ctx, int tflags, const char *tok, int nTok, int iStart, int iEnd) {
	mnemoTokens *t = (mnemoTokens *)ctx;
	if (tflags & FTS5_TOKEN_COLOCATED) return SQLITE_OK; // a synonym: no position of its own
	if (nTok > MNEMO_MAX_TOKEN) nTok = MNEMO_MAX_TOKEN;
	if (t->n == t->cap) {
		int cap = t->cap ? 2 * t->cap : 64;
		int *off = sqlite3_realloc(t->off, cap * sizeof(int));
		if (!off) return SQLITE_NOMEM;
		t->off = off;
		int *len = sqlite3_realloc(t->len, cap * sizeof(int));
		if (!len) return SQLITE_NOMEM;
		t->len = len;
		t->cap = cap;
	}
	if (t->bufLen + nTok > t->bufCap) {
		int cap = t->bufCap ? 2 * t->bufCap : 512;
		while (cap < t->bufLen + nTok) cap *= 2;
		char *buf = sqlite3_realloc(t->buf, cap);
		if (!buf) return SQLITE_NOMEM;
		t->buf = buf;
		t->bufCap = cap;
	}
	memcpy(t->buf + t->bufLen, tok, nTok);
	t->off[t->n] = t->bufLen;
	t->len[t->n] = nTok;
	t->bufLen += nTok;
	t->n++;
	return SQLITE_OK;
}

static int mnemoTokenEq(const mnemoTokens *a, int i, const mnemoTokens *b, int j) {
	return a->len[i] == b->len[j] && memcmp(a->buf + a->off[i], b->buf + b->off[j], a->len[i]) == 0;
}

typedef struct {
	fts5_tokenizer tk;
	Fts5Tokenizer *tok;
	int nPhrase;
	mnemoTokens *phrase; // each term's tokens
	double *aIDF;
	double *aFreq;
	double avgdl;
} mnemoTextQuery;

static void mnemoTextQueryFree(void *p) {
	mnemoTextQuery *q = (mnemoTextQuery *)p;
	if (!q) return;
	for (int i = 0; i < q->nPhrase; i++) mnemoTokensFree(&q->phrase[i]);
	if (q->tok) q->tk.xDelete(q->tok);
	sqlite3_free(q->phrase);
	sqlite3_free(q->aIDF);
	sqlite3_free(q->aFreq);
	sqlite3_free(q);
}

static mnemoTextQuery *mnemoTextQueryNew(sqlite3_context *ctx, fts5_api *api, sqlite3_value **argv) {
	const char *terms = (const char *)sqlite3_value_blob(argv[1]);
	int nTerms = sqlite3_value_bytes(argv[1]);
	const unsigned char *counts = (const unsigned char *)sqlite3_value_blob(argv[2]);
	int nCounts = sqlite3_value_bytes(argv[2]);
	const unsigned char *st = (const unsigned char *)sqlite3_value_blob(argv[3]);
	int nSt = sqlite3_value_bytes(argv[3]);
	int nPhrase = 1;
	for (int i = 0; i < nTerms; i++) if (terms[i] == 0) nPhrase++;
	if (!terms || nTerms == 0 || nCounts != 8 * nPhrase) {
		sqlite3_result_error(ctx, "mnemo_bm25_text: want NUL-separated terms and one 8-byte count per term", -1);
		return 0;
	}
	if (!st || nSt != 16 || mnemoInt64(st, 0) <= 0) {
		sqlite3_result_error(ctx, "mnemo_bm25_text: want the rows' count and total length (two int64, count > 0)", -1);
		return 0;
	}
	sqlite3_int64 nRow = mnemoInt64(st, 0), nToken = mnemoInt64(st, 1);
	mnemoTextQuery *q = sqlite3_malloc(sizeof(*q));
	if (!q) {
		sqlite3_result_error_nomem(ctx);
		return 0;
	}
	memset(q, 0, sizeof(*q));
	void *userData = 0;
	const char *azArg[] = {"unicode61"};
	int rc = api->xFindTokenizer(api, "porter", &userData, &q->tk);
	if (rc == SQLITE_OK) rc = q->tk.xCreate(userData, azArg, 1, &q->tok);
	if (rc != SQLITE_OK) {
		sqlite3_free(q);
		sqlite3_result_error(ctx, "mnemo_bm25_text: no porter unicode61 tokenizer", -1);
		return 0;
	}
	q->nPhrase = nPhrase;
	q->phrase = sqlite3_malloc(nPhrase * sizeof(mnemoTokens));
	q->aIDF = sqlite3_malloc(nPhrase * sizeof(double));
	q->aFreq = sqlite3_malloc(nPhrase * sizeof(double));
	if (!q->phrase || !q->aIDF || !q->aFreq) {
		mnemoTextQueryFree(q);
		sqlite3_result_error_nomem(ctx);
		return 0;
	}
	memset(q->phrase, 0, nPhrase * sizeof(mnemoTokens));
	q->avgdl = (double)nToken / (double)nRow;
	const char *start = terms;
	for (int i = 0; i < nPhrase && rc == SQLITE_OK; i++) {
		const char *end = memchr(start, 0, terms + nTerms - start);
		if (!end) end = terms + nTerms;
		rc = q->tk.xTokenize(q->tok, &q->phrase[i], FTS5_TOKENIZE_QUERY, start, (int)(end - start), mnemoTokenCb);
		sqlite3_int64 nHit = mnemoInt64(counts, i);
		double idf = log((nRow - nHit + 0.5) / (nHit + 0.5));
		if (idf <= 0.0) idf = 1e-6;
		q->aIDF[i] = idf;
		start = end + 1;
	}
	if (rc != SQLITE_OK) {
		mnemoTextQueryFree(q);
		sqlite3_result_error_code(ctx, rc);
		return 0;
	}
	return q;
}

static void mnemoBm25Text(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
	const double k1 = 1.2;
	const double b = 0.75;
	mnemoTextQuery *q = (mnemoTextQuery *)sqlite3_get_auxdata(ctx, 1);
	if (!q) {
		q = mnemoTextQueryNew(ctx, (fts5_api *)sqlite3_user_data(ctx), argv);
		if (!q) return;
		sqlite3_set_auxdata(ctx, 1, q, mnemoTextQueryFree);
		q = (mnemoTextQuery *)sqlite3_get_auxdata(ctx, 1);
		if (!q) { // SQLite would not keep it: it freed q already
			sqlite3_result_error_nomem(ctx);
			return;
		}
	}
	const char *text = (const char *)sqlite3_value_text(argv[0]);
	int nText = sqlite3_value_bytes(argv[0]);
	int all = sqlite3_value_int(argv[4]);
	mnemoTokens doc;
	memset(&doc, 0, sizeof(doc));
	int rc = text ? q->tk.xTokenize(q->tok, &doc, FTS5_TOKENIZE_DOCUMENT, text, nText, mnemoTokenCb) : SQLITE_OK;
	if (rc != SQLITE_OK) {
		mnemoTokensFree(&doc);
		sqlite3_result_error_code(ctx, rc);
		return;
	}
	int matched = 0, missing = 0;
	for (int i = 0; i < q->nPhrase; i++) {
		const mnemoTokens *ph = &q->phrase[i];
		q->aFreq[i] = 0.0;
		if (ph->n == 0) continue; // no token: not part of the query
		for (int p = 0; p + ph->n <= doc.n; p++) {
			int j = 0;
			while (j < ph->n && mnemoTokenEq(&doc, p + j, ph, j)) j++;
			if (j == ph->n) q->aFreq[i] += 1.0;
		}
		if (q->aFreq[i] > 0.0) matched++; else missing++;
	}
	double D = (double)doc.n;
	mnemoTokensFree(&doc);
	if (matched == 0 || (all && missing > 0)) {
		sqlite3_result_null(ctx);
		return;
	}
	double score = 0.0;
	for (int i = 0; i < q->nPhrase; i++) {
		score += q->aIDF[i] * ((q->aFreq[i] * (k1 + 1.0)) / (q->aFreq[i] + k1 * (1 - b + b * D / q->avgdl)));
	}
	sqlite3_result_double(ctx, -1.0 * score);
}

// mnemoRegister runs for every connection SQLite opens (sqlite3_auto_extension):
// FTS5 hands out its API through a pointer bound to SELECT fts5(?1).
static int mnemoRegister(sqlite3 *db, char **pzErr, const void *thunk) {
	fts5_api *api = 0;
	sqlite3_stmt *stmt = 0;
	// Preparing reads the schema, which another connection may hold
	// locked (a migration, a checkpoint); the driver sets its busy timeout
	// only after the open, so wait as long as its default (5 s) here.
	sqlite3_busy_timeout(db, 5000);
	int rc = sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &stmt, 0);
	if (rc == SQLITE_OK) {
		sqlite3_bind_pointer(stmt, 1, (void *)&api, "fts5_api_ptr", 0);
		sqlite3_step(stmt);
		rc = sqlite3_finalize(stmt);
	}
	if ((rc & 0xFF) == SQLITE_BUSY || (rc & 0xFF) == SQLITE_LOCKED) {
		*pzErr = sqlite3_mprintf("mnemo_bm25: the database stayed locked: %s", sqlite3_errmsg(db));
		return rc;
	}
	if (rc != SQLITE_OK) {
		// Not a database, corrupt, unreadable: the connection's first
		// statement reports that in its own words.
		return SQLITE_OK;
	}
	if (!api || api->iVersion < 2) {
		*pzErr = sqlite3_mprintf("mnemo_bm25: SQLite has no FTS5 API version 2");
		return SQLITE_ERROR;
	}
	rc = api->xCreateFunction(api, "mnemo_bm25", 0, mnemoBm25, 0);
	if (rc != SQLITE_OK) return rc;
	return sqlite3_create_function_v2(db, "mnemo_bm25_text", 5, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
		api, mnemoBm25Text, 0, 0, 0);
}

static int mnemo_register_bm25(void) {
	return sqlite3_auto_extension((void (*)(void))mnemoRegister);
}
*/
import "C"

import (
	"fmt"
	"sync"
)

// RankFunction names the FTS5 ranking function that takes the query's
// document frequencies: mnemo_bm25(table, counts[, lengths[, stats]]),
// with counts a BLOB of one little-endian int64 per phrase, negative for a
// phrase that only filters, lengths the rows' token counts, one
// little-endian uint16 per rowid, 0xFFFF where unknown (or NULL), and
// stats the number of rows and their total length in tokens (two
// little-endian int64), which makes it score the table's first column
// alone against those statistics. Empty when the build has none (then use
// bm25()).
const RankFunction = "mnemo_bm25"

// TextRankFunction names the scalar function that scores a row's text as
// RankFunction scores it in an FTS5 query with stats: mnemo_bm25_text(
// content, terms, counts, stats, all), terms a BLOB of NUL-separated
// phrases, counts and stats as for RankFunction, all 1 for AND; NULL for a
// text that does not match.
const TextRankFunction = "mnemo_bm25_text"

// registerRank makes every connection opened from now on have
// mnemo_bm25. SQLite's list of automatic extensions is process state,
// hence the package-level Once.
var registerRank = sync.OnceValue(func() error {
	if rc := C.mnemo_register_bm25(); rc != 0 {
		return fmt.Errorf("register %s: SQLite error %d", RankFunction, int(rc))
	}
	return nil
})
