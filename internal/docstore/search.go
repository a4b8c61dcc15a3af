package docstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/longhaul-dev/longhaul/internal/pgvector"
	"github.com/longhaul-dev/longhaul/internal/sqldb"
)

// RRFK is the k of reciprocal rank fusion: a chunk at rank r (from 1) of a
// ranking scores 1/(RRFK+r) from it. 60 is the constant of Cormack,
// Clarke and Büttcher's paper, which the rankings' depth does not change
// much.
const RRFK = 60

// RankDepth is how many chunks each ranking (vector, full-text) gives the
// fusion: enough for K = 50 hits whatever the other ranking says.
const RankDepth = 100

// maxQueryTerms bounds the words of a query the full-text ranking looks
// for; maxTermBytes the length of each.
const (
	maxQueryTerms = 32
	maxTermBytes  = 64
)

// ranked is one chunk a ranking found, with the ranking's own score.
type ranked struct {
	id    int64
	key   string // vs_id "/" file_id
	score float64
}

// allowedFile is a completed attachment a query may return, and what its
// hits carry.
type allowedFile struct {
	vsID, fileID, filename string
	attrs                  map[string]any
}

func attachKey(vsID, fileID string) string { return vsID + "/" + fileID }

// terms are the words of a query for the full-text ranking: runs of
// letters and digits, lowercased, each once, at most maxQueryTerms. Only
// words reach the full-text engines (each quoted for FTS5, each through
// plainto_tsquery on PostgreSQL), so no user text is ever query syntax.
func terms(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		w = strings.ToLower(w)
		if len(w) > maxTermBytes || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == maxQueryTerms {
			break
		}
	}
	return out
}

// Search ranks the chunks of the owner's stores; see Store.Search. Both
// rankings return at most RankDepth chunks of completed attachments that
// match the filter; hybrid fuses them by reciprocal rank fusion,
// Σ 1/(RRFK+rank) over the rankings that ran, divided by n/(RRFK+1) for n
// rankings, so a chunk first in every ranking scores 1 and one first in
// only one of two scores about 0.5. Vector scores are (1+cosine)/2; text
// scores are r/(1+r) of the engine's rank r (FTS5's -bm25, PostgreSQL's
// ts_rank_cd).
func (s *sqlStore) Search(ctx context.Context, q Query) ([]Hit, error) {
	const op = "search"
	if err := checkOwner(op, q.Owner); err != nil {
		return nil, err
	}
	k, mode, vec, err := checkQuery(q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	stores, err := s.ownStores(ctx, q.Owner, q.VectorStoreIDs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	allowed, err := s.allowed(ctx, q.Owner, stores, q.Filter)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if len(allowed) == 0 {
		return []Hit{}, nil
	}
	scored, err := s.rank(ctx, q, mode, stores, allowed, vec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var hits []ranked
	for _, r := range scored {
		if r.score >= q.ScoreThreshold {
			hits = append(hits, r)
		}
	}
	if len(hits) > k {
		hits = hits[:k]
	}
	return s.hits(ctx, hits, allowed)
}

// checkQuery checks q, but for its owner, and returns the number of results, the mode with
// its default filled in, and the query's vector normalized (nil without
// one).
func checkQuery(q Query) (k int, mode string, vec []float32, err error) {
	k = q.K
	switch {
	case k == 0:
		k = 10
	case k < 1 || k > 50:
		return 0, "", nil, fmt.Errorf("%w: max_num_results must be 1 to 50, got %d", ErrInvalid, q.K)
	}
	mode = q.Mode
	if mode == "" {
		mode = "hybrid"
	}
	if mode != "hybrid" && mode != "vector" && mode != "text" {
		return 0, "", nil, fmt.Errorf("%w: mode %q (want hybrid, vector or text)", ErrInvalid, q.Mode)
	}
	if q.ScoreThreshold < 0 || q.ScoreThreshold > 1 || math.IsNaN(q.ScoreThreshold) {
		return 0, "", nil, fmt.Errorf("%w: score_threshold must be 0 to 1", ErrInvalid)
	}
	if len(q.VectorStoreIDs) == 0 || len(q.VectorStoreIDs) > MaxSearchStores {
		return 0, "", nil, fmt.Errorf("%w: 1 to %d vector stores", ErrInvalid, MaxSearchStores)
	}
	if err := checkFilter(q.Filter); err != nil {
		return 0, "", nil, err
	}
	if q.Vector != nil {
		v, ok := pgvector.Normalize(q.Vector)
		if !ok || len(v) > MaxDimensions {
			return 0, "", nil, fmt.Errorf("%w: zero, non-finite or oversized query vector", ErrInvalid)
		}
		vec = v
	}
	if mode == "vector" && vec == nil {
		return 0, "", nil, fmt.Errorf("%w: vector mode needs the query's vector", ErrInvalid)
	}
	if len(q.Text) > 64<<10 || !sqldb.ValidText(q.Text) {
		return 0, "", nil, fmt.Errorf("%w: query text", ErrInvalid)
	}
	return k, mode, vec, nil
}

// ownStores returns the distinct ids, sorted, once it has checked that
// every one is a vector store of owner, and marks them used.
func (s *sqlStore) ownStores(ctx context.Context, owner string, ids []string) ([]string, error) {
	seen := map[string]bool{}
	for _, id := range ids {
		if !validID(storePrefix, id) {
			return nil, fmt.Errorf("vector store %q: %w", id, ErrNotFound)
		}
		seen[id] = true
	}
	stores := make([]string, 0, len(seen))
	for id := range seen {
		stores = append(stores, id)
	}
	slices.Sort(stores)
	// Every store must be the owner's before anything is read or touched.
	found, err := sqldb.Strings(ctx, s.db.Reader(), `SELECT id FROM vector_stores WHERE owner = ? AND id IN (`+sqldb.Placeholders(len(stores))+`)`,
		append([]any{owner}, sqldb.Args(stores)...)...)
	if err != nil {
		return nil, err
	}
	if len(found) != len(stores) {
		for _, id := range stores {
			if !slices.Contains(found, id) {
				return nil, fmt.Errorf("vector store %q: %w", id, ErrNotFound)
			}
		}
	}
	if err := s.touch(ctx, s.db.Writer(), owner, stores); err != nil {
		return nil, err
	}
	return stores, nil
}

// rank runs the rankings mode asks for over the allowed chunks and returns
// the chunks scored (see Search), the best first.
func (s *sqlStore) rank(ctx context.Context, q Query, mode string, stores []string, allowed map[string]allowedFile, vec []float32) ([]ranked, error) {
	var vranks, tranks []ranked
	var err error
	rankings := 0
	if vec != nil && mode != "text" {
		rankings++
		if s.vec.Vector {
			vranks, err = s.annRank(ctx, q.Owner, stores, allowed, vec)
		} else {
			vranks, err = s.exactRank(ctx, q.Owner, stores, allowed, vec)
		}
		if err != nil {
			return nil, fmt.Errorf("vector ranking: %w", err)
		}
	}
	words := terms(q.Text)
	if mode != "vector" && len(words) > 0 {
		rankings++
		tranks, err = s.textRank(ctx, q.Owner, stores, allowed, words)
		if err != nil {
			return nil, fmt.Errorf("full-text ranking: %w", err)
		}
	}

	switch mode {
	case "vector":
		scored := make([]ranked, 0, len(vranks))
		for _, r := range vranks {
			scored = append(scored, ranked{r.id, r.key, (1 + r.score) / 2})
		}
		return scored, nil
	case "text":
		return tranks, nil
	default:
		return fuse(rankings, vranks, tranks), nil
	}
}

// fuse is reciprocal rank fusion of the rankings (see Search), the best
// first; ties go to the older chunk.
func fuse(n int, rankings ...[]ranked) []ranked {
	if n == 0 {
		return nil
	}
	sum := map[int64]*ranked{}
	var order []*ranked
	for _, rs := range rankings {
		for i, r := range rs {
			h := sum[r.id]
			if h == nil {
				h = &ranked{id: r.id, key: r.key}
				sum[r.id] = h
				order = append(order, h)
			}
			h.score += 1 / float64(RRFK+i+1)
		}
	}
	top := float64(n) / float64(RRFK+1)
	out := make([]ranked, len(order))
	for i, h := range order {
		out[i] = ranked{h.id, h.key, min(1, h.score/top)}
	}
	slices.SortStableFunc(out, func(a, b ranked) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return out
}

// allowed returns the completed attachments of the stores whose
// attributes match f, by attachKey.
func (s *sqlStore) allowed(ctx context.Context, owner string, stores []string, f *Filter) (map[string]allowedFile, error) {
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT a.vs_id, a.file_id, a.attributes, f.filename
		FROM vector_store_files a JOIN files f ON f.id = a.file_id AND f.owner = a.owner
		WHERE a.owner = ? AND a.status = ? AND a.vs_id IN (`+sqldb.Placeholders(len(stores))+`)`,
		append([]any{owner, StatusCompleted}, sqldb.Args(stores)...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]allowedFile{}
	for rows.Next() {
		var a allowedFile
		var attrs string
		if err := rows.Scan(&a.vsID, &a.fileID, &attrs, &a.filename); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(attrs), &a.attrs); err != nil {
			return nil, err
		}
		if f == nil || f.Match(a.attrs) {
			out[attachKey(a.vsID, a.fileID)] = a
		}
	}
	return out, rows.Err()
}

// allowedJSON is the keys of allowed as a JSON array, for the rankings'
// SQL to keep only them.
func allowedJSON(allowed map[string]allowedFile) string {
	keys := make([]string, 0, len(allowed))
	for k := range allowed {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b, _ := json.Marshal(keys)
	return string(b)
}

// exactRank scores every chunk of the stores whose vector has q's length
// by cosine similarity (the dot product of unit vectors), in Go, and keeps
// the RankDepth best. It decodes each vector into one buffer, so it holds
// one vector at a time.
func (s *sqlStore) exactRank(ctx context.Context, owner string, stores []string, allowed map[string]allowedFile, q []float32) ([]ranked, error) {
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT id, vs_id, file_id, vec FROM chunks WHERE owner = ? AND dim = ? AND vs_id IN (`+sqldb.Placeholders(len(stores))+`)`,
		append([]any{owner, len(q)}, sqldb.Args(stores)...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ranked
	var id int64
	// RawBytes: the row's own memory, valid until the next row, so the
	// scan copies no vector.
	var vsID, fileID, b sql.RawBytes
	var keyBuf []byte
	for rows.Next() {
		if err := rows.Scan(&id, &vsID, &fileID, &b); err != nil {
			return nil, err
		}
		keyBuf = append(append(append(keyBuf[:0], vsID...), '/'), fileID...)
		if _, ok := allowed[string(keyBuf)]; !ok || len(b) != 4*len(q) {
			continue
		}
		key := string(keyBuf)
		var dot float32
		for i := range q {
			dot += q[i] * math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		out = append(out, ranked{id, key, float64(dot)})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b ranked) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	if len(out) > RankDepth {
		out = out[:RankDepth]
	}
	return out, nil
}

// annRank asks pgvector's HNSW index of q's length for the RankDepth
// nearest chunks (cosine distance), with iterative scans (pgvector 0.8)
// so the owner's and the filter's conditions do not starve the result.
func (s *sqlStore) annRank(ctx context.Context, owner string, stores []string, allowed map[string]allowedFile, q []float32) ([]ranked, error) {
	var out []ranked
	err := s.db.Read(ctx, func(tx sqldb.Tx) error {
		if _, err := tx.ExecContext(ctx, `SET LOCAL hnsw.ef_search = `+strconv.Itoa(max(40, RankDepth))); err != nil {
			return err
		}
		if s.vec.Iterative {
			if _, err := tx.ExecContext(ctx, `SET LOCAL hnsw.iterative_scan = strict_order`); err != nil {
				return err
			}
		}
		d := strconv.Itoa(len(q)) // an int: safe in the statement
		lit := pgvector.Literal(q)
		args := append([]any{lit, owner}, sqldb.Args(stores)...)
		args = append(args, allowedJSON(allowed), lit, RankDepth)
		rows, err := tx.QueryContext(ctx, `SELECT id, vs_id, file_id, 1 - (embedding::vector(`+d+`) <=> ?::vector(`+d+`))
			FROM chunks WHERE owner = ? AND dim = `+d+` AND embedding IS NOT NULL AND vs_id IN (`+sqldb.Placeholders(len(stores))+`)
			AND (vs_id || '/' || file_id) IN (SELECT jsonb_array_elements_text(?::jsonb))
			ORDER BY embedding::vector(`+d+`) <=> ?::vector(`+d+`) LIMIT ?`, args...)
		if err != nil {
			return err
		}
		out, err = scanRanked(rows, func(f float64) float64 { return f })
		return err
	})
	return out, err
}

// textRank ranks the chunks by the full-text engine: FTS5's bm25 on
// SQLite, ts_rank_cd on PostgreSQL, for any of the words (OR: a chunk
// that has some of a question's words is still a candidate; the rank
// weighs how many and how rare).
//
// FTS5 (https://sqlite.org/fts5.html): each word is an FTS5 string, "in
// double quotes", an embedded quote doubled (3.1 "FTS5 Strings"), so
// NEAR, AND, *, ^ and column filters in user text are plain words; bm25
// gives "better matches … numerically lower values" (5.1.1), so the rank
// is -bm25. PostgreSQL
// (https://www.postgresql.org/docs/current/textsearch-controls.html,
// 12.3.2): plainto_tsquery ignores punctuation and puts & between the
// words; websearch_to_tsquery never raises syntax errors either but gives
// users its own operators (or, -, quotes) — neither is an OR of the
// words, so each word goes through plainto_tsquery alone and the
// tsqueries are joined with || (OR). ts_rank_cd's normalization 32
// divides the rank by itself + 1 (12.3.3).
func (s *sqlStore) textRank(ctx context.Context, owner string, stores []string, allowed map[string]allowedFile, words []string) ([]ranked, error) {
	if !s.db.Postgres() {
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
		}
		args := append([]any{strings.Join(quoted, " OR "), owner}, sqldb.Args(stores)...)
		args = append(args, allowedJSON(allowed), RankDepth)
		rows, err := s.db.Reader().QueryContext(ctx, `SELECT c.id, c.vs_id, c.file_id, -bm25(chunks_fts)
			FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid
			WHERE chunks_fts MATCH ? AND c.owner = ? AND c.vs_id IN (`+sqldb.Placeholders(len(stores))+`)
			AND (c.vs_id || '/' || c.file_id) IN (SELECT value FROM json_each(?))
			ORDER BY bm25(chunks_fts), c.id LIMIT ?`, args...)
		if err != nil {
			return nil, err
		}
		return scanRanked(rows, func(r float64) float64 { r = max(r, 0); return r / (1 + r) })
	}
	parts := make([]string, len(words))
	args := make([]any, 0, len(words)+len(stores)+3)
	for i, w := range words {
		parts[i] = `plainto_tsquery('english', ?)`
		args = append(args, w)
	}
	args = append(args, owner)
	args = append(args, sqldb.Args(stores)...)
	args = append(args, allowedJSON(allowed), RankDepth)
	// ts_rank_cd's normalization 32 is rank/(rank+1), already in [0, 1).
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT c.id, c.vs_id, c.file_id, ts_rank_cd(c.tsv, tq.q, 32)
		FROM chunks c, (SELECT (`+strings.Join(parts, " || ")+`) AS q) tq
		WHERE c.tsv @@ tq.q AND c.owner = ? AND c.vs_id IN (`+sqldb.Placeholders(len(stores))+`)
		AND (c.vs_id || '/' || c.file_id) IN (SELECT jsonb_array_elements_text(?::jsonb))
		ORDER BY 4 DESC, c.id LIMIT ?`, args...)
	if err != nil {
		return nil, err
	}
	return scanRanked(rows, func(r float64) float64 { return min(max(r, 0), 1) })
}

func scanRanked(rows *sql.Rows, scale func(float64) float64) ([]ranked, error) {
	defer rows.Close()
	var out []ranked
	for rows.Next() {
		var r ranked
		var vsID, fileID string
		if err := rows.Scan(&r.id, &vsID, &fileID, &r.score); err != nil {
			return nil, err
		}
		r.key, r.score = attachKey(vsID, fileID), scale(r.score)
		out = append(out, r)
	}
	return out, rows.Err()
}

// hits reads the chunks of the ranked ids, in their order.
func (s *sqlStore) hits(ctx context.Context, rs []ranked, allowed map[string]allowedFile) ([]Hit, error) {
	out := []Hit{}
	if len(rs) == 0 {
		return out, nil
	}
	ids := make([]any, len(rs))
	for i, r := range rs {
		ids[i] = r.id
	}
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT id, idx, text FROM chunks WHERE id IN (`+sqldb.Placeholders(len(ids))+`)`, ids...)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	defer rows.Close()
	type row struct {
		idx  int
		text string
	}
	byID := map[int64]row{}
	for rows.Next() {
		var id int64
		var r row
		if err := rows.Scan(&id, &r.idx, &r.text); err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
		byID[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	for _, r := range rs {
		c, ok := byID[r.id]
		if !ok {
			continue // deleted since it was ranked
		}
		a := allowed[r.key]
		attrs := make(map[string]any, len(a.attrs))
		for k, v := range a.attrs {
			attrs[k] = v
		}
		out = append(out, Hit{VectorStoreID: a.vsID, FileID: a.fileID, Filename: a.filename, Index: c.idx, Text: c.text, Score: r.score, Attributes: attrs})
	}
	return out, nil
}
