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
// its end or not given are looked up as bm25() does.

typedef struct {
	int nPhrase;
	double avgdl;
	double *aIDF;
	double *aFreq;
} mnemoBm25Data;

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
	rc = api->xRowCount(fts, &nRow);
	if (rc == SQLITE_OK) rc = api->xColumnTotalSize(fts, -1, &nToken);
	if (rc == SQLITE_OK) p->avgdl = (double)nToken / (double)nRow;
	const unsigned char *counts = 0;
	if (nVal >= 1 && sqlite3_value_type(apVal[0]) == SQLITE_BLOB && sqlite3_value_bytes(apVal[0]) == nPhrase * 8) {
		counts = (const unsigned char *)sqlite3_value_blob(apVal[0]);
	}
	for (int i = 0; rc == SQLITE_OK && i < nPhrase; i++) {
		sqlite3_int64 nHit = 0;
		if (counts) {
			sqlite3_uint64 v = 0;
			for (int j = 7; j >= 0; j--) v = (v << 8) | counts[i * 8 + j];
			nHit = (sqlite3_int64)v;
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
			p->aFreq[i] += 1.0;
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
		if (nTok < 0) rc = api->xColumnSize(fts, -1, &nTok);
		D = (double)nTok;
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
// document frequencies: mnemo_bm25(table, counts[, lengths]), with counts a
// BLOB of one little-endian int64 per phrase, negative for a phrase that
// only filters, and lengths the rows' token counts, one little-endian
// uint16 per rowid, 0xFFFF where unknown. Empty when the build has none
// (then use bm25()).
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
