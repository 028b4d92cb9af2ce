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
// (what xColumnSize reads from the %_docsize table, one B-tree lookup per
// row, which was half of the cost of ranking): a BLOB of little-endian
// uint16, one per rowid (the whole row's length), 0xFFFF for a length not
// given; rows past its end or not given are looked up. NULL stands for no
// lengths.
//
// mnemo_bm25(fts, counts, lengths, stats[, weights[, bs]]) scores the
// table's first F columns, the fields, against statistics the caller keeps
// (one tenant's, say, in a table that holds several): stats is a BLOB of
// little-endian int64, the number of rows and then each field's total
// length in tokens over them (F = its size / 8 - 1); counts must then be
// taken over the same rows and must fit the query (an error otherwise).
// The other columns only filter rows. weights (F little-endian float64;
// default 1 for the first field, 0 for the others) and bs (F float64;
// default 0.75 each) make it BM25F: per phrase, tf = sum over the fields of
// weight × hits / (1 - b + b × the field's length / its average), scored
// idf × tf × (k1 + 1) / (tf + k1) — except that with the first field alone
// weighted, weight 1, b 0.75, it is bm25()'s arithmetic on that field, so
// that a profile's scores are bm25()'s over that profile alone to the bit.
// lengths, if given, then hold per rowid one uint16 for each field whose b
// is not 0, in field order (the fields whose lengths are read).

#define MNEMO_MAX_FIELDS 16

typedef struct {
	int nPhrase;
	int nField;   // 0: bm25() over every column, the table's statistics
	int classic;  // the first field alone, weight 1: bm25()'s arithmetic
	double avgdl[MNEMO_MAX_FIELDS];
	double w[MNEMO_MAX_FIELDS];
	double b[MNEMO_MAX_FIELDS];
	double *aIDF;
	double *aFreq; // nPhrase × max(1, nField)
	// nLen is the number of lengths per rowid in the lengths BLOB;
	// lenSlot[c] is field c's among them (-1: not in it).
	int nLen;
	int lenSlot[MNEMO_MAX_FIELDS];
} mnemoBm25Data;

// mnemoInt64 reads the i-th little-endian int64 of a BLOB.
static sqlite3_int64 mnemoInt64(const unsigned char *b, int i) {
	sqlite3_uint64 v = 0;
	for (int j = 7; j >= 0; j--) v = (v << 8) | b[i * 8 + j];
	return (sqlite3_int64)v;
}

// mnemoDouble reads the i-th little-endian float64 of a BLOB.
static double mnemoDouble(const unsigned char *b, int i) {
	sqlite3_uint64 v = (sqlite3_uint64)mnemoInt64(b, i);
	double d;
	memcpy(&d, &v, sizeof d);
	return d;
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
	int nField = 0;
	const unsigned char *st = 0;
	if (nVal >= 3 && sqlite3_value_type(apVal[2]) == SQLITE_BLOB) {
		int n = sqlite3_value_bytes(apVal[2]);
		if (n < 16 || n % 8 != 0 || n / 8 - 1 > MNEMO_MAX_FIELDS || n / 8 - 1 > api->xColumnCount(fts)) return SQLITE_RANGE;
		st = (const unsigned char *)sqlite3_value_blob(apVal[2]);
		nField = n / 8 - 1;
	}
	int nFreq = nPhrase * (nField > 0 ? nField : 1);
	p = (mnemoBm25Data *)sqlite3_malloc64(sizeof(mnemoBm25Data) + (sqlite3_int64)(nPhrase + nFreq) * sizeof(double));
	if (!p) return SQLITE_NOMEM;
	memset(p, 0, sizeof(mnemoBm25Data) + (size_t)(nPhrase + nFreq) * sizeof(double));
	p->nPhrase = nPhrase;
	p->nField = nField;
	p->aIDF = (double *)&p[1];
	p->aFreq = &p->aIDF[nPhrase];
	sqlite3_int64 nRow = 0;
	if (nField > 0) {
		nRow = mnemoInt64(st, 0);
		const unsigned char *wb = 0, *bb = 0;
		if (nVal >= 4 && sqlite3_value_type(apVal[3]) == SQLITE_BLOB) {
			if (sqlite3_value_bytes(apVal[3]) != 8 * nField) rc = SQLITE_RANGE;
			wb = (const unsigned char *)sqlite3_value_blob(apVal[3]);
		}
		if (nVal >= 5 && sqlite3_value_type(apVal[4]) == SQLITE_BLOB) {
			if (sqlite3_value_bytes(apVal[4]) != 8 * nField) rc = SQLITE_RANGE;
			bb = (const unsigned char *)sqlite3_value_blob(apVal[4]);
		}
		p->classic = 1;
		for (int c = 0; rc == SQLITE_OK && c < nField; c++) {
			p->avgdl[c] = (double)mnemoInt64(st, 1 + c) / (double)nRow;
			p->w[c] = wb ? mnemoDouble(wb, c) : (c == 0 ? 1.0 : 0.0);
			p->b[c] = bb ? mnemoDouble(bb, c) : 0.75;
			if (p->w[c] != (c == 0 ? 1.0 : 0.0) || (c == 0 && p->b[c] != 0.75)) p->classic = 0;
			p->lenSlot[c] = p->b[c] != 0.0 ? p->nLen++ : -1;
		}
	} else {
		p->nLen = 1; // the whole row's length
		sqlite3_int64 nToken = 0;
		rc = api->xRowCount(fts, &nRow);
		if (rc == SQLITE_OK) rc = api->xColumnTotalSize(fts, -1, &nToken);
		if (rc == SQLITE_OK) p->avgdl[0] = (double)nToken / (double)nRow;
	}
	const unsigned char *counts = 0;
	if (nVal >= 1 && sqlite3_value_type(apVal[0]) == SQLITE_BLOB && sqlite3_value_bytes(apVal[0]) == nPhrase * 8) {
		counts = (const unsigned char *)sqlite3_value_blob(apVal[0]);
	}
	if (rc == SQLITE_OK && nField > 0 && !counts) {
		// Counting here would count over the whole table, not over the
		// rows the stats describe.
		rc = SQLITE_MISMATCH;
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

// mnemoLength returns the length of column c of the current row: from the
// lengths BLOB when it has it, else from FTS5 (c -1: the whole row).
static int mnemoLength(const Fts5ExtensionApi *api, Fts5Context *fts, const mnemoBm25Data *p, int nVal, sqlite3_value **apVal, int c, double *out) {
	int slot = c < 0 ? 0 : p->lenSlot[c];
	if (slot >= 0 && nVal >= 2 && sqlite3_value_type(apVal[1]) == SQLITE_BLOB) {
		sqlite3_int64 rowid = api->xRowid(fts);
		if (rowid >= 0 && rowid < sqlite3_value_bytes(apVal[1]) / (2 * p->nLen)) {
			const unsigned char *len = (const unsigned char *)sqlite3_value_blob(apVal[1]);
			sqlite3_int64 at = 2 * (rowid * p->nLen + slot);
			int v = len[at] | (len[at + 1] << 8);
			if (v != 0xFFFF) {
				*out = (double)v;
				return SQLITE_OK;
			}
		}
	}
	int nTok = 0;
	int rc = api->xColumnSize(fts, c, &nTok);
	*out = (double)nTok;
	return rc;
}

static void mnemoBm25(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int nVal, sqlite3_value **apVal) {
	const double k1 = 1.2;
	double score = 0.0;
	mnemoBm25Data *p = 0;
	int rc = mnemoBm25GetData(api, fts, nVal, apVal, &p);
	int nF = p && p->nField > 0 ? p->nField : 1;
	// Each scored phrase's hits are counted on its own position list.
	// bm25() asks for the row's instances instead (xInstCount), which
	// merges every phrase's list into one array ordered by position, the
	// filter phrases' too: the same counts, at more cost per row.
	for (int i = 0; rc == SQLITE_OK && i < p->nPhrase; i++) {
		double *f = &p->aFreq[i * nF];
		memset(f, 0, nF * sizeof(double));
		if (p->aIDF[i] == 0.0) continue; // a filter phrase
		Fts5PhraseIter it;
		int iCol = 0, iOff = 0;
		rc = api->xPhraseFirst(fts, i, &it, &iCol, &iOff);
		for (; rc == SQLITE_OK && iCol >= 0; api->xPhraseNext(fts, &it, &iCol, &iOff)) {
			if (p->nField == 0) f[0] += 1.0;
			else if (iCol < p->nField) f[iCol] += 1.0;
		}
	}
	if (rc == SQLITE_OK && (p->nField == 0 || p->classic)) {
		double D = 0.0;
		rc = mnemoLength(api, fts, p, nVal, apVal, p->nField == 0 ? -1 : 0, &D);
		for (int i = 0; rc == SQLITE_OK && i < p->nPhrase; i++) {
			double f = p->aFreq[i * nF];
			score += p->aIDF[i] * ((f * (k1 + 1.0)) / (f + k1 * (1 - 0.75 + 0.75 * D / p->avgdl[0])));
		}
	} else if (rc == SQLITE_OK) {
		double norm[MNEMO_MAX_FIELDS];
		for (int c = 0; rc == SQLITE_OK && c < p->nField; c++) {
			norm[c] = 1.0;
			if (p->w[c] != 0.0 && p->b[c] != 0.0 && p->avgdl[c] > 0.0) { // an empty field everywhere: no length to normalise
				double D = 0.0;
				rc = mnemoLength(api, fts, p, nVal, apVal, c, &D);
				norm[c] = 1 - p->b[c] + p->b[c] * D / p->avgdl[c];
			}
		}
		for (int i = 0; rc == SQLITE_OK && i < p->nPhrase; i++) {
			double tf = 0.0;
			for (int c = 0; c < p->nField; c++) {
				if (p->w[c] != 0.0) tf += p->w[c] * p->aFreq[i * nF + c] / norm[c];
			}
			score += p->aIDF[i] * (tf * (k1 + 1.0)) / (tf + k1);
		}
	}
	if (rc == SQLITE_MISMATCH) {
		sqlite3_result_error(ctx, "mnemo_bm25: with stats, counts must hold one int64 per phrase of the query", -1);
		return;
	}
	if (rc == SQLITE_RANGE) {
		sqlite3_result_error(ctx, "mnemo_bm25: stats must hold the row count and one total per field; weights and bs one float64 per field", -1);
		return;
	}
	if (rc != SQLITE_OK) {
		sqlite3_result_error_code(ctx, rc);
		return;
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
	return api->xCreateFunction(api, "mnemo_bm25", 0, mnemoBm25, 0);
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
// document frequencies: mnemo_bm25(table, counts[, lengths[, stats[,
// weights[, bs]]]]), with counts a BLOB of one little-endian int64 per
// phrase, negative for a phrase that only filters, lengths the rows' token
// counts, little-endian uint16 per rowid (the whole row's, or with stats
// each field's whose b is not 0), 0xFFFF where unknown (or NULL), stats the number of rows and each field's total length in tokens
// (little-endian int64), which makes it score the table's first columns,
// the fields, against those statistics, weights and bs each field's weight
// and length normalisation (little-endian float64) for BM25F. Empty when
// the build has none (then use bm25()).
const RankFunction = "mnemo_bm25"

// registerRank makes every connection opened from now on have
// mnemo_bm25. SQLite's list of automatic extensions is process state,
// hence the package-level Once.
var registerRank = sync.OnceValue(func() error {
	if rc := C.mnemo_register_bm25(); rc != 0 {
		return fmt.Errorf("register %s: SQLite error %d", RankFunction, int(rc))
	}
	return nil
})
