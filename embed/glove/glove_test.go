package glove

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mnemo-dev/mnemo/embed"
)

// The unit tests run on tiny synthetic models; quality_test.go and
// bench_test.go use the installed real one.

// testWords is a small vocabulary in "frequency order". "," is never
// reachable by the tokeniser and is dropped.
var testWords = []string{
	"the", ",", "of", "do", "not", "can", "will", "is", "dog", "puppy", "cat",
	"well-known", "well", "known", "friendly", "caroline", "cafe", "e-mail",
	"sweden", "n't", "jwt", "auth",
}

// sourceJSON renders words and vectors in the wink-embeddings layout.
func sourceJSON(words []string, vecs [][]float32) []byte {
	dim := len(vecs[0])
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"precision":8,"l2NormIndex":%d,"wordIndex":%d,"size":%d,"dimensions":%d,"words":`, dim, dim+1, len(words), dim)
	w, _ := json.Marshal(words)
	b.Write(w)
	b.WriteString(`,"vectors":{`)
	for i, word := range words {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(word)
		b.Write(k)
		b.WriteByte(':')
		norm := 0.0
		vals := make([]float64, 0, dim+2)
		for _, x := range vecs[i] {
			vals = append(vals, float64(x))
			norm += float64(x) * float64(x)
		}
		vals = append(vals, math.Sqrt(norm), float64(i))
		v, _ := json.Marshal(vals)
		b.Write(v)
	}
	b.WriteString(`},"unkVector":[0,0]}`)
	return b.Bytes()
}

// oneHot returns n one-hot vectors of dimension n.
func oneHot(n int) [][]float32 {
	vecs := make([][]float32, n)
	for i := range vecs {
		vecs[i] = make([]float32, n)
		vecs[i][i] = 1
	}
	return vecs
}

// convertTest converts words/vecs with cfg and loads the result from a file.
func convertTest(t *testing.T, words []string, vecs [][]float32, cfg ConvertConfig) (*Model, string) {
	t.Helper()
	var out bytes.Buffer
	st, err := Convert(&out, bytes.NewReader(sourceJSON(words, vecs)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes != int64(out.Len()) || st.SourceWords != len(words) || st.Dim != len(vecs[0]) {
		t.Fatalf("stats %+v for %d bytes", st, out.Len())
	}
	path := filepath.Join(t.TempDir(), DefaultFile)
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return m, path
}

// probeModel is a model whose word vectors are one-hot, without
// post-processing or common component, so an embedding shows which words a
// text was read as and with what weight.
func probeModel(t *testing.T) *Model {
	t.Helper()
	m, _ := convertTest(t, testWords, oneHot(len(testWords)), ConvertConfig{Precision: Float32, abttDims: -1, registerP: -1})
	clear(m.component)
	return m
}

// readAs returns the words text was read as, with their weights relative to
// the heaviest.
func readAs(t *testing.T, m *Model, text string) map[string]float64 {
	t.Helper()
	v, err := m.Embed(context.Background(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	top := float64(slices.Max(v[0]))
	for j, x := range v[0] {
		if x != 0 {
			got[testWords[j]] = math.Round(float64(x)/top*100) / 100
		}
	}
	return got
}

func TestScanWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		want       []string
	}{
		{"empty", "", nil},
		{"punctuation only", `... -- "!?" ’`, nil},
		{"lowercases", "The DOG, the Cat.", []string{"the:title,initial", "dog:upper", "the:lower", "cat:title"}},
		{"sentence starts", "Hi. Caroline! Why? Mel\nBob", []string{"hi:title,initial", "caroline:title,initial", "why:title,initial", "mel:title,initial", "bob:title,initial"}},
		{"inner capital", "ask Caroline now", []string{"ask:initial", "caroline:title", "now:lower"}},
		{"apostrophes kept inside words", "don't 'quoted' dogs' it’s", []string{"don't:initial", "quoted:lower", "dogs:lower", "it's:lower"}},
		{"hyphens kept inside words", "well-known -dash- e‑mail a--b", []string{"well-known:initial", "dash:lower", "e-mail:lower", "a:lower", "b:lower"}},
		{"digits", "v2.3 in 2023, 10:30", []string{"v2:initial", "3:initial", "in:lower", "2023:lower", "10:lower", "30:lower"}},
		{"accents folded", "Café Ångström naïve Straße", []string{"cafe:title,initial", "angstrom:title", "naive:lower", "strase:title"}},
		{"combining accents dropped", "cafe\u0301", []string{"cafe:initial"}},
		{"other scripts lowercased", "Привет мир", []string{"привет:title,initial", "мир:lower"}},
		{"acronyms", "use JWT and I", []string{"use:initial", "jwt:upper", "and:lower", "i:lower"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			scanWords(tt.text, nil, func(w []byte, s shape) {
				got = append(got, string(w)+":"+shapeString(s))
			})
			if !slices.Equal(got, tt.want) {
				t.Errorf("scanWords(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func shapeString(s shape) string {
	var parts []string
	switch s &^ shapeInitial {
	case shapeLower:
		parts = append(parts, "lower")
	case shapeTitle:
		parts = append(parts, "title")
	case shapeUpper:
		parts = append(parts, "upper")
	}
	if s&shapeInitial != 0 {
		if s&^shapeInitial == shapeLower {
			return "initial"
		}
		parts = append(parts, "initial")
	}
	return strings.Join(parts, ",")
}

func TestScanWords_LongWord(t *testing.T) {
	t.Parallel()
	var got []int
	scanWords(strings.Repeat("a", 150), nil, func(w []byte, _ shape) { got = append(got, len(w)) })
	if !slices.Equal(got, []int{64, 64, 22}) {
		t.Errorf("word lengths %v, want [64 64 22]", got)
	}
}

func TestFoldLatin(t *testing.T) {
	t.Parallel()
	for r, want := range map[rune]byte{'À': 'a', 'é': 'e', 'Ç': 'c', 'ñ': 'n', 'Ø': 'o', 'ß': 's', 'ÿ': 'y', 'Ł': 'l', 'ž': 'z', 'ſ': 's', '×': 0, '÷': 0, 'a': 0, 'ƀ': 0} {
		if got := foldLatin(r); got != want {
			t.Errorf("foldLatin(%q) = %q, want %q", r, got, want)
		}
	}
}

func TestModel_ReadsWordsAsTheVocabularyDoes(t *testing.T) {
	t.Parallel()
	m := probeModel(t)
	const tw = defaultTitleWeight
	tests := []struct {
		name, text string
		want       []string // words read, each with weight ≈ its SIF weight
	}{
		{"plain", "dog cat", []string{"dog", "cat"}},
		{"n't becomes not", "don't", []string{"do", "not"}},
		{"can't", "Can't", []string{"can", "not"}},
		{"won't", "won’t", []string{"will", "not"}},
		{"ain't", "ain't", []string{"is", "not"}},
		{"clitic dropped", "dog's cat'll", []string{"dog", "cat"}},
		{"hyphenated vocabulary word", "well-known", []string{"well-known"}},
		{"hyphenated unknown word split", "dog-friendly", []string{"dog", "friendly"}},
		{"hyphenated with unknown part", "cat-xyz", []string{"cat"}},
		{"accent folded", "café", []string{"cafe"}},
		{"unknown words ignored", "zzz dog 2023", []string{"dog"}},
		{"punctuation ignored", "dog , .", []string{"dog"}},
		{"acronym keeps weight", "use JWT auth", []string{"jwt", "auth"}},
		{"sentence-initial name keeps weight", "Caroline", []string{"caroline"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := readAs(t, m, tt.text)
			words := make([]string, 0, len(got))
			for w := range got {
				words = append(words, w)
			}
			slices.Sort(words)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(words, want) {
				t.Errorf("%q read as %v, want %v", tt.text, got, tt.want)
			}
		})
	}
	t.Run("names inside a sentence weigh less", func(t *testing.T) {
		t.Parallel()
		got := readAs(t, m, "ask Caroline about sweden")
		cfg := ConvertConfig{}.withDefaults()
		n := len(testWords)
		want := tw * sifWeight("caroline", 16, n, cfg) / sifWeight("sweden", 19, n, cfg)
		if r := got["caroline"]; math.Abs(r-want) > 0.01 || got["sweden"] != 1 {
			t.Errorf("read as %v, want caroline %.2f × sweden", got, want)
		}
	})
	t.Run("frequent words weigh less", func(t *testing.T) {
		t.Parallel()
		got := readAs(t, m, "the dog")
		if !(got["the"] < got["dog"]) {
			t.Errorf("read as %v, want the < dog", got)
		}
	})
}

func TestModel_Embed(t *testing.T) {
	t.Parallel()
	m, _ := convertTest(t, testWords, randomVectors(len(testWords), 16, 1), ConvertConfig{})
	ctx := context.Background()
	texts := []string{"the dog", "A friendly puppy!", "", "zzz 123", "Caroline can't e-mail the cat"}
	got, err := m.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(got), len(texts))
	}
	for i, v := range got {
		if len(v) != m.Dim() || cap(v) != m.Dim() {
			t.Fatalf("vector %d: len %d cap %d, want %d", i, len(v), cap(v), m.Dim())
		}
		n := norm(v)
		switch texts[i] {
		case "", "zzz 123":
			if n != 0 {
				t.Errorf("%q: norm %v, want the zero vector", texts[i], n)
			}
		default:
			if math.Abs(n-1) > 1e-5 {
				t.Errorf("%q: norm %v, want 1", texts[i], n)
			}
			if d := dot(v, m.component); math.Abs(float64(d)) > 1e-5 {
				t.Errorf("%q: projection on the common component %v, want 0", texts[i], d)
			}
		}
	}
	one, err := m.Embed(ctx, texts[1:2])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(one[0], got[1]) {
		t.Errorf("embedding depends on the batch: %v vs %v", one[0], got[1])
	}
	if m.Model() != DefaultName || m.Dim() != 16 || m.Vocab() != len(testWords)-1 || m.Precision() != Int8 {
		t.Errorf("model %q dim %d vocab %d precision %v", m.Model(), m.Dim(), m.Vocab(), m.Precision())
	}
	var _ embed.Embedder = m
}

func TestModel_EmbedConcurrent(t *testing.T) {
	t.Parallel()
	m, _ := convertTest(t, testWords, randomVectors(len(testWords), 8, 2), ConvertConfig{})
	texts := []string{"the dog", "a puppy", "Caroline's cat", "well-known e-mail"}
	want, err := m.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, err := m.Embed(context.Background(), texts)
				if err != nil {
					t.Error(err)
					return
				}
				for i := range got {
					if !slices.Equal(got[i], want[i]) {
						t.Errorf("concurrent embedding of %q differs", texts[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestModel_EmbedLargeBatch: a batch split across CPUs gives each text the
// vector it gets alone, in input order; a cancelled one fails whole.
func TestModel_EmbedLargeBatch(t *testing.T) {
	t.Parallel()
	m, _ := convertTest(t, testWords, randomVectors(len(testWords), 8, 4), ConvertConfig{})
	words := []string{"the dog", "a puppy", "Caroline's cat", "well-known e-mail", "", "zzz"}
	texts := make([]string, 1000)
	for i := range texts {
		texts[i] = words[i%len(words)] + " " + words[(i/len(words))%len(words)]
	}
	got, err := m.Embed(context.Background(), texts)
	if err != nil || len(got) != len(texts) {
		t.Fatalf("Embed: %d vectors, %v", len(got), err)
	}
	for i, text := range texts {
		one, err := m.Embed(context.Background(), []string{text})
		if err != nil || !slices.Equal(one[0], got[i]) {
			t.Fatalf("text %d %q: alone %v (%v), in the batch %v", i, text, one, err, got[i])
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Embed(ctx, texts); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled large batch: %v, want context.Canceled", err)
	}
}

func TestModel_EmbedCancelled(t *testing.T) {
	t.Parallel()
	m, _ := convertTest(t, testWords, randomVectors(len(testWords), 8, 3), ConvertConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Embed(ctx, []string{"dog"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed on a cancelled context: %v, want context.Canceled", err)
	}
}

func TestModel_Int8CloseToFloat32(t *testing.T) {
	t.Parallel()
	vecs := randomVectors(len(testWords), 32, 4)
	m8, _ := convertTest(t, testWords, vecs, ConvertConfig{})
	m32, _ := convertTest(t, testWords, vecs, ConvertConfig{Precision: Float32})
	texts := []string{"the dog", "puppy cat friendly", "Caroline can't e-mail"}
	a, _ := m8.Embed(context.Background(), texts)
	b, _ := m32.Embed(context.Background(), texts)
	for i := range texts {
		if c := dot(a[i], b[i]); c < 0.999 {
			t.Errorf("%q: cosine(int8, float32) = %v, want ≥ 0.999", texts[i], c)
		}
	}
	if m8.Size() >= m32.Size() {
		t.Errorf("int8 file %d bytes, float32 %d", m8.Size(), m32.Size())
	}
}

func TestConvert_Deterministic(t *testing.T) {
	t.Parallel()
	src := sourceJSON(testWords, randomVectors(len(testWords), 8, 5))
	var a, b bytes.Buffer
	if _, err := Convert(&a, bytes.NewReader(src), ConvertConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Convert(&b, bytes.NewReader(src), ConvertConfig{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two conversions of the same source differ")
	}
}

func TestConvert_Vocab(t *testing.T) {
	t.Parallel()
	m, _ := convertTest(t, testWords, randomVectors(len(testWords), 8, 6), ConvertConfig{Vocab: 5, Name: "tiny"})
	if m.Vocab() != 5 || m.Model() != "tiny" {
		t.Fatalf("vocab %d name %q, want 5 tiny", m.Vocab(), m.Model())
	}
	for i, w := range []string{"the", "of", "do", "not", "can"} {
		if got := m.lookup([]byte(w)); got != i {
			t.Errorf("lookup(%q) = %d, want %d", w, got, i)
		}
		if m.word(i) != w {
			t.Errorf("word(%d) = %q, want %q", i, m.word(i), w)
		}
	}
	if got := m.lookup([]byte("dog")); got != -1 {
		t.Errorf("lookup(dog) = %d, want -1", got)
	}
}

func TestConvert_Errors(t *testing.T) {
	t.Parallel()
	good := string(sourceJSON([]string{"a", "b"}, [][]float32{{1, 0}, {0, 1}}))
	tests := []struct {
		name, src string
		cfg       ConvertConfig
	}{
		{"not json", "nope", ConvertConfig{}},
		{"truncated", good[:len(good)/2], ConvertConfig{}},
		{"no vectors", `{"dimensions":2,"wordIndex":3,"words":["a"]}`, ConvertConfig{}},
		{"vectors first", `{"vectors":{},"dimensions":2}`, ConvertConfig{}},
		{"missing vector", `{"dimensions":2,"wordIndex":3,"words":["a","b"],"vectors":{"a":[1,0,1,0]}}`, ConvertConfig{}},
		{"bad index", `{"dimensions":2,"wordIndex":3,"words":["a"],"vectors":{"a":[1,0,1,7]}}`, ConvertConfig{}},
		{"short vector", `{"dimensions":2,"wordIndex":3,"words":["a"],"vectors":{"a":[1,0]}}`, ConvertConfig{}},
		{"no usable word", `{"dimensions":2,"wordIndex":3,"words":[","],"vectors":{",":[1,0,1,0]}}`, ConvertConfig{}},
		{"long name", good, ConvertConfig{Name: strings.Repeat("x", 25)}},
		{"bad precision", good, ConvertConfig{Precision: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Convert(&bytes.Buffer{}, strings.NewReader(tt.src), tt.cfg); err == nil {
				t.Error("Convert succeeded, want an error")
			}
		})
	}
}

func TestLoad_Missing(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "nope.bin"))
	if !errors.Is(err, ErrModelMissing) {
		t.Fatalf("Load: %v, want ErrModelMissing", err)
	}
	if !strings.Contains(err.Error(), "mnemo models pull") {
		t.Errorf("error %q does not say how to install the model", err)
	}
}

func TestLoad_Invalid(t *testing.T) {
	t.Parallel()
	_, path := convertTest(t, testWords, randomVectors(len(testWords), 8, 7), ConvertConfig{})
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(path); err != nil {
		t.Fatalf("Verify of a good file: %v", err)
	}
	tests := []struct {
		name     string
		mutate   func([]byte) []byte
		loadable bool // only Verify notices
	}{
		{"empty", func(b []byte) []byte { return nil }, false},
		{"header only", func(b []byte) []byte { return b[:headerSize] }, false},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, false},
		{"extended", func(b []byte) []byte { return append(b, 0) }, false},
		{"bad magic", func(b []byte) []byte { b[0] = 'X'; return b }, false},
		{"other version", func(b []byte) []byte { b[8] = 9; return b }, false},
		{"zero dimension", func(b []byte) []byte { clear(b[12:16]); return b }, false},
		{"flipped vector byte", func(b []byte) []byte { b[len(b)/2] ^= 1; return b }, true},
		{"flipped checksum", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "m.bin")
			if err := os.WriteFile(p, tt.mutate(slices.Clone(good)), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			if tt.loadable {
				if err != nil {
					t.Fatalf("Load: %v, want success (only Verify reads every byte)", err)
				}
				_, err = Verify(p)
			}
			if !errors.Is(err, ErrModelInvalid) {
				t.Fatalf("got %v, want ErrModelInvalid", err)
			}
			if !strings.Contains(err.Error(), "mnemo models pull") {
				t.Errorf("error %q does not say how to rebuild the model", err)
			}
		})
	}
}

// TestModel_DamagedTable checks that lookups stay in bounds and terminate on
// a hash table and offsets full of garbage.
func TestModel_DamagedTable(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if _, err := Convert(&out, bytes.NewReader(sourceJSON(testWords, randomVectors(len(testWords), 8, 8))), ConvertConfig{}); err != nil {
		t.Fatal(err)
	}
	b := out.Bytes()
	m, err := parse(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.table {
		m.table[i] = 0x07 // every entry 0x07070707: out of range
	}
	for i := range m.offsets {
		m.offsets[i] = 0xff
	}
	if got := m.lookup([]byte("dog")); got != -1 {
		t.Errorf("lookup on a damaged table = %d, want -1", got)
	}
	binary.LittleEndian.PutUint32(m.table, 1) // entries in range, offsets garbage
	for i := 4; i < len(m.table); i += 4 {
		binary.LittleEndian.PutUint32(m.table[i:], 1)
	}
	if got := m.lookup([]byte("dog")); got != -1 {
		t.Errorf("lookup on a full table = %d, want -1", got)
	}
	if _, err := m.Embed(context.Background(), []string{"the dog"}); err != nil {
		t.Fatal(err)
	}
	if err := m.verify(); err == nil {
		t.Error("verify of a damaged model succeeded")
	}
}

func TestPackageJSON(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range []struct{ name, body string }{
		{"package/README.md", "readme"},
		{packageJSON, `{"words":[]}`},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	tw.Close()
	zw.Close()
	r, err := PackageJSON(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(r); err != nil || string(b) != `{"words":[]}` {
		t.Errorf("read %q, %v", b, err)
	}
	if _, err := PackageJSON(strings.NewReader("not gzip")); err == nil {
		t.Error("PackageJSON of garbage succeeded")
	}
}

func TestDefaultPath(t *testing.T) {
	t.Parallel()
	if got, want := DefaultPath("/h"), filepath.Join("/h", "models", DefaultFile); got != want {
		t.Errorf("DefaultPath = %q, want %q", got, want)
	}
}

func TestTopEigenvectors(t *testing.T) {
	t.Parallel()
	// diag(1, 5, 3): eigenvectors e1, e2, e0 in that order.
	a := []float64{1, 0, 0, 0, 5, 0, 0, 0, 3}
	got := topEigenvectors(a, 3, 2)
	if math.Abs(float64(got[0][1])-1) > 1e-6 || math.Abs(float64(got[1][2])-1) > 1e-6 {
		t.Errorf("top eigenvectors %v, want e1 then e2", got)
	}
}

func FuzzEmbed(f *testing.F) {
	for _, s := range []string{"", "the dog", "Don't e-mail Caroline's cat!", "a--b''c", "’‑’", "\xff\xfe", "Ünïcödé Straße", strings.Repeat("x-", 100)} {
		f.Add(s)
	}
	vecs := randomVectors(len(testWords), 8, 9)
	var out bytes.Buffer
	if _, err := Convert(&out, bytes.NewReader(sourceJSON(testWords, vecs)), ConvertConfig{}); err != nil {
		f.Fatal(err)
	}
	m, err := parse(out.Bytes())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		v, err := m.Embed(context.Background(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		if n := norm(v[0]); n != 0 && math.Abs(n-1) > 1e-4 {
			t.Errorf("norm %v", n)
		}
	})
}

// randomVectors returns n deterministic pseudo-random vectors of dimension dim.
func randomVectors(n, dim int, seed uint64) [][]float32 {
	x := seed*0x9e3779b97f4a7c15 + 1
	vecs := make([][]float32, n)
	for i := range vecs {
		vecs[i] = make([]float32, dim)
		for j := range vecs[i] {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			vecs[i][j] = float32(int64(x%2001)-1000) / 1000
		}
	}
	return vecs
}

func norm(v []float32) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}
