package eval

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/footnote-dev/footnote/internal/corpustest"
)

// The two halves of the development set (testdata/README.md): tune.jsonl is for choosing
// methods and thresholds, report.jsonl for the figures the README and CI hold. tune2.jsonl,
// tune3.jsonl and tune4.jsonl, written later, give the tuning side more questions; the reporting
// half stays as it was. report2.jsonl is a second, held-out reporting set written after
// report.jsonl had been measured twice; report3.jsonl a third, written to decide on a second
// candidate; report4.jsonl and report5.jsonl, written in session 4 (the first 13 papers of
// MANIFEST.tsv and the other 12), judge the session-4 candidate; report6.jsonl and
// report7.jsonl, written the same way after those were measured, judge a second one;
// report8.jsonl and report9.jsonl, smaller, a third; report10.jsonl and report11.jsonl,
// mostly answerable questions, re-judge the third; report12.jsonl and report13.jsonl,
// written in session 5 over the first 12 and the last 13 papers, judge a session-5 candidate;
// report14.jsonl and report15.jsonl, written later in session 5 the same way, judge the
// next one; report16.jsonl and report17.jsonl, written in session 6 before its candidate
// was built, judge that one, and report18.jsonl … report21.jsonl, written after it,
// measure it again; report22.jsonl … report25.jsonl, written in session 7 over a quarter of
// the papers each, judge the session-7 candidate, and report26.jsonl … report29.jsonl,
// written the same way after it shipped, the next one, and report30.jsonl …
// report33.jsonl a third, and report34.jsonl … report37.jsonl a fourth.
const (
	tuneFile      = "testdata/tune.jsonl"
	reportFile    = "testdata/report.jsonl"
	tune2File     = "testdata/tune2.jsonl"
	tune3File     = "testdata/tune3.jsonl"
	tune4File     = "testdata/tune4.jsonl"
	report2File   = "testdata/report2.jsonl"
	report3File   = "testdata/report3.jsonl"
	report4File   = "testdata/report4.jsonl"
	report5File   = "testdata/report5.jsonl"
	report6File   = "testdata/report6.jsonl"
	report7File   = "testdata/report7.jsonl"
	report8File   = "testdata/report8.jsonl"
	report9File   = "testdata/report9.jsonl"
	report10File  = "testdata/report10.jsonl"
	report11File  = "testdata/report11.jsonl"
	report12File  = "testdata/report12.jsonl"
	report13File  = "testdata/report13.jsonl"
	report14File  = "testdata/report14.jsonl"
	report15File  = "testdata/report15.jsonl"
	report16File  = "testdata/report16.jsonl"
	report17File  = "testdata/report17.jsonl"
	report18File  = "testdata/report18.jsonl"
	report19File  = "testdata/report19.jsonl"
	report20File  = "testdata/report20.jsonl"
	report21File  = "testdata/report21.jsonl"
	report22File  = "testdata/report22.jsonl"
	report23File  = "testdata/report23.jsonl"
	report24File  = "testdata/report24.jsonl"
	report25File  = "testdata/report25.jsonl"
	report26File  = "testdata/report26.jsonl"
	report27File  = "testdata/report27.jsonl"
	report28File  = "testdata/report28.jsonl"
	report29File  = "testdata/report29.jsonl"
	report30File  = "testdata/report30.jsonl"
	report31File  = "testdata/report31.jsonl"
	report32File  = "testdata/report32.jsonl"
	report33File  = "testdata/report33.jsonl"
	report34File  = "testdata/report34.jsonl"
	report35File  = "testdata/report35.jsonl"
	report36File  = "testdata/report36.jsonl"
	report37File  = "testdata/report37.jsonl"
	report38File  = "testdata/report38.jsonl"
	report39File  = "testdata/report39.jsonl"
	report40File  = "testdata/report40.jsonl"
	report41File  = "testdata/report41.jsonl"
	report42File  = "testdata/report42.jsonl"
	report43File  = "testdata/report43.jsonl"
	report44File  = "testdata/report44.jsonl"
	report45File  = "testdata/report45.jsonl"
	report46File  = "testdata/report46.jsonl"
	report47File  = "testdata/report47.jsonl"
	report48File  = "testdata/report48.jsonl"
	report49File  = "testdata/report49.jsonl"
	report50File  = "testdata/report50.jsonl"
	report51File  = "testdata/report51.jsonl"
	report52File  = "testdata/report52.jsonl"
	report53File  = "testdata/report53.jsonl"
	report54File  = "testdata/report54.jsonl"
	report55File  = "testdata/report55.jsonl"
	report56File  = "testdata/report56.jsonl"
	report57File  = "testdata/report57.jsonl"
	report58File  = "testdata/report58.jsonl"
	report59File  = "testdata/report59.jsonl"
	report60File  = "testdata/report60.jsonl"
	report61File  = "testdata/report61.jsonl"
	report62File  = "testdata/report62.jsonl"
	report63File  = "testdata/report63.jsonl"
	report64File  = "testdata/report64.jsonl"
	report65File  = "testdata/report65.jsonl"
	report66File  = "testdata/report66.jsonl"
	report67File  = "testdata/report67.jsonl"
	report68File  = "testdata/report68.jsonl"
	report69File  = "testdata/report69.jsonl"
	report70File  = "testdata/report70.jsonl"
	report71File  = "testdata/report71.jsonl"
	report72File  = "testdata/report72.jsonl"
	report73File  = "testdata/report73.jsonl"
	report74File  = "testdata/report74.jsonl"
	report75File  = "testdata/report75.jsonl"
	report76File  = "testdata/report76.jsonl"
	report77File  = "testdata/report77.jsonl"
	report78File  = "testdata/report78.jsonl"
	report79File  = "testdata/report79.jsonl"
	report80File  = "testdata/report80.jsonl"
	report81File  = "testdata/report81.jsonl"
	report82File  = "testdata/report82.jsonl"
	report83File  = "testdata/report83.jsonl"
	report84File  = "testdata/report84.jsonl"
	report85File  = "testdata/report85.jsonl"
	report86File  = "testdata/report86.jsonl"
	report87File  = "testdata/report87.jsonl"
	report88File  = "testdata/report88.jsonl"
	report89File  = "testdata/report89.jsonl"
	report90File  = "testdata/report90.jsonl"
	report91File  = "testdata/report91.jsonl"
	report92File  = "testdata/report92.jsonl"
	report93File  = "testdata/report93.jsonl"
	report94File  = "testdata/report94.jsonl"
	report95File  = "testdata/report95.jsonl"
	report96File  = "testdata/report96.jsonl"
	report97File  = "testdata/report97.jsonl"
	report98File  = "testdata/report98.jsonl"
	report99File  = "testdata/report99.jsonl"
	report100File = "testdata/report100.jsonl"
	report101File = "testdata/report101.jsonl"
	report102File = "testdata/report102.jsonl"
	report103File = "testdata/report103.jsonl"
	report104File = "testdata/report104.jsonl"
	report105File = "testdata/report105.jsonl"
	report106File = "testdata/report106.jsonl"
	report107File = "testdata/report107.jsonl"
	report108File = "testdata/report108.jsonl"
	report109File = "testdata/report109.jsonl"
	report110File = "testdata/report110.jsonl"
	report111File = "testdata/report111.jsonl"
	report112File = "testdata/report112.jsonl"
	report113File = "testdata/report113.jsonl"
)

// quarterBrief is the category counts of the brief for a set over a quarter of the papers,
// which most later batches were written to.
var quarterBrief = map[string]int{"paraphrase": 5, "numeric": 6, "two-paper": 1, "followup": 3, "near-miss": 7, "off-topic": 2}

// laterBatches holds the category counts each later batch was written to
// (testdata/README.md). They stay out of the stratification check, which is about the two
// original halves.
var laterBatches = map[string]map[string]int{
	tune2File:     {"paraphrase": 10, "numeric": 12, "two-paper": 6, "followup": 5, "near-miss": 8, "off-topic": 3},
	tune3File:     {"paraphrase": 8, "numeric": 10, "two-paper": 4, "followup": 4, "near-miss": 8, "off-topic": 2},
	tune4File:     {"paraphrase": 7, "numeric": 9, "two-paper": 4, "followup": 4, "near-miss": 6, "off-topic": 2},
	report2File:   {"paraphrase": 7, "numeric": 9, "two-paper": 3, "followup": 4, "near-miss": 12, "off-topic": 3},
	report3File:   {"paraphrase": 6, "numeric": 4, "two-paper": 2, "followup": 3, "near-miss": 12, "off-topic": 3},
	report4File:   {"paraphrase": 8, "numeric": 10, "two-paper": 3, "followup": 4, "near-miss": 12, "off-topic": 3},
	report5File:   {"paraphrase": 8, "numeric": 10, "two-paper": 3, "followup": 4, "near-miss": 12, "off-topic": 3},
	report6File:   {"paraphrase": 8, "numeric": 10, "two-paper": 3, "followup": 4, "near-miss": 12, "off-topic": 3},
	report7File:   {"paraphrase": 8, "numeric": 10, "two-paper": 3, "followup": 4, "near-miss": 12, "off-topic": 3},
	report8File:   {"paraphrase": 1, "numeric": 1, "two-paper": 1, "followup": 1, "near-miss": 12, "off-topic": 3},
	report9File:   {"paraphrase": 1, "numeric": 6, "two-paper": 1, "followup": 3, "near-miss": 12, "off-topic": 3},
	report10File:  {"paraphrase": 8, "numeric": 10, "two-paper": 2, "followup": 4, "near-miss": 4, "off-topic": 1},
	report11File:  {"paraphrase": 8, "numeric": 10, "two-paper": 2, "followup": 4, "near-miss": 4, "off-topic": 1},
	report12File:  {"paraphrase": 7, "numeric": 8, "two-paper": 2, "followup": 4, "near-miss": 8, "off-topic": 2},
	report13File:  {"paraphrase": 7, "numeric": 8, "two-paper": 2, "followup": 4, "near-miss": 8, "off-topic": 2},
	report14File:  {"paraphrase": 7, "numeric": 8, "two-paper": 2, "followup": 4, "near-miss": 8, "off-topic": 2},
	report15File:  {"paraphrase": 7, "numeric": 8, "two-paper": 2, "followup": 4, "near-miss": 8, "off-topic": 2},
	report16File:  {"paraphrase": 7, "numeric": 8, "two-paper": 2, "followup": 4, "near-miss": 8, "off-topic": 2},
	report17File:  {"paraphrase": 7, "numeric": 8, "two-paper": 2, "followup": 4, "near-miss": 8, "off-topic": 2},
	report18File:  {"paraphrase": 7, "numeric": 8, "two-paper": 2, "followup": 4, "near-miss": 8, "off-topic": 2},
	report19File:  {"paraphrase": 7, "numeric": 8, "two-paper": 2, "followup": 4, "near-miss": 8, "off-topic": 2},
	report20File:  {"paraphrase": 7, "numeric": 8, "two-paper": 2, "followup": 4, "near-miss": 8, "off-topic": 2},
	report21File:  {"paraphrase": 7, "numeric": 8, "two-paper": 2, "followup": 4, "near-miss": 8, "off-topic": 2},
	report22File:  quarterBrief,
	report23File:  quarterBrief,
	report24File:  quarterBrief,
	report25File:  quarterBrief,
	report26File:  quarterBrief,
	report27File:  quarterBrief,
	report28File:  quarterBrief,
	report29File:  quarterBrief,
	report30File:  quarterBrief,
	report31File:  quarterBrief,
	report32File:  quarterBrief,
	report33File:  quarterBrief,
	report34File:  quarterBrief,
	report35File:  quarterBrief,
	report36File:  quarterBrief,
	report37File:  quarterBrief,
	report38File:  quarterBrief,
	report39File:  quarterBrief,
	report40File:  quarterBrief,
	report41File:  {"paraphrase": 5, "numeric": 6, "two-paper": 1, "followup": 3, "near-miss": 7, "off-topic": 1},
	report42File:  quarterBrief,
	report43File:  quarterBrief,
	report44File:  quarterBrief,
	report45File:  quarterBrief,
	report46File:  quarterBrief,
	report47File:  quarterBrief,
	report48File:  quarterBrief,
	report49File:  quarterBrief,
	report50File:  quarterBrief,
	report51File:  quarterBrief,
	report52File:  quarterBrief,
	report53File:  quarterBrief,
	report54File:  quarterBrief,
	report55File:  quarterBrief,
	report56File:  quarterBrief,
	report57File:  quarterBrief,
	report58File:  quarterBrief,
	report59File:  quarterBrief,
	report60File:  quarterBrief,
	report61File:  quarterBrief,
	report62File:  quarterBrief,
	report63File:  quarterBrief,
	report64File:  quarterBrief,
	report65File:  quarterBrief,
	report66File:  quarterBrief,
	report67File:  quarterBrief,
	report68File:  quarterBrief,
	report69File:  quarterBrief,
	report70File:  quarterBrief,
	report71File:  quarterBrief,
	report72File:  quarterBrief,
	report73File:  quarterBrief,
	report74File:  quarterBrief,
	report75File:  quarterBrief,
	report76File:  quarterBrief,
	report77File:  quarterBrief,
	report78File:  quarterBrief,
	report79File:  quarterBrief,
	report80File:  quarterBrief,
	report81File:  quarterBrief,
	report82File:  quarterBrief,
	report83File:  quarterBrief,
	report84File:  quarterBrief,
	report85File:  quarterBrief,
	report86File:  quarterBrief,
	report87File:  quarterBrief,
	report88File:  quarterBrief,
	report89File:  quarterBrief,
	report90File:  quarterBrief,
	report91File:  quarterBrief,
	report92File:  quarterBrief,
	report93File:  quarterBrief,
	report94File:  quarterBrief,
	report95File:  quarterBrief,
	report96File:  quarterBrief,
	report97File:  quarterBrief,
	report98File:  quarterBrief,
	report99File:  quarterBrief,
	report100File: quarterBrief,
	report101File: quarterBrief,
	report102File: quarterBrief,
	report103File: quarterBrief,
	report104File: quarterBrief,
	report105File: quarterBrief,
	report106File: quarterBrief,
	report107File: quarterBrief,
	report108File: quarterBrief,
	report109File: quarterBrief,
	report110File: quarterBrief,
	report111File: quarterBrief,
	report112File: quarterBrief,
	report113File: quarterBrief,
}

// loadHalves loads every file of the development set, keyed by path.
func loadHalves(t *testing.T) map[string][]Question {
	t.Helper()
	halves := map[string][]Question{}
	files := []string{tuneFile, reportFile}
	for f := range laterBatches {
		files = append(files, f)
	}
	for _, f := range files {
		qs, err := LoadQuestionsFile(f)
		if err != nil {
			t.Fatal(err)
		}
		halves[f] = qs
	}
	return halves
}

// TestDevSet checks the development set's shape: every file loads, holds every category,
// shares no question or id with another, and keeps the promised counts.
func TestDevSet(t *testing.T) {
	halves := loadHalves(t)
	seen := map[string]string{}
	ids := map[string]string{}
	total := map[string]int{}
	for f, qs := range halves {
		cats := map[string]int{}
		for _, q := range qs {
			if q.Category == "" {
				t.Errorf("%s: %s has no category", f, q.ID)
			}
			if other, ok := ids[q.ID]; ok {
				t.Errorf("%s: id %s is also used by %s", f, q.ID, other)
			}
			ids[q.ID] = f
			cats[q.Category]++
			if _, later := laterBatches[f]; !later {
				total[q.Category]++
			}
			// Elliptical follow-ups ("And what batch size did they use?") may repeat
			// across conversations; questions may not.
			key := strings.ToLower(strings.TrimSpace(q.Question))
			if other, ok := seen[key]; ok {
				t.Errorf("%s: %s repeats %s: %q", f, q.ID, other, q.Question)
			}
			seen[key] = f + ":" + q.ID
			if q.Category == "followup" && (len(q.Followups) < 1 || len(q.Followups) > 2) {
				t.Errorf("%s: %s has %d follow-ups, want 1 or 2 (conversations of 2–3 turns)", f, q.ID, len(q.Followups))
			}
			if (q.Category == "near-miss" || q.Category == "off-topic") == q.Answerable {
				t.Errorf("%s: %s is %s but answerable=%v", f, q.ID, q.Category, q.Answerable)
			}
			if q.Category == "two-paper" && len(q.ExpectedSources) != 2 {
				t.Errorf("%s: %s is two-paper with %d expected sources", f, q.ID, len(q.ExpectedSources))
			}
		}
		for _, c := range []string{"paraphrase", "numeric", "two-paper", "followup", "near-miss", "off-topic"} {
			if cats[c] == 0 {
				t.Errorf("%s has no %s question", f, c)
			}
		}
		if want, later := laterBatches[f]; later {
			for c, n := range want {
				if cats[c] != n {
					t.Errorf("%s: %d %s questions, want %d", f, cats[c], c, n)
				}
			}
			if len(cats) != len(want) {
				t.Errorf("%s: categories %v, want only %v", f, cats, want)
			}
		}
	}
	var n int
	for _, c := range total {
		n += c
	}
	if n < 60 || total["near-miss"] < 24 || total["off-topic"] < 4 {
		t.Errorf("%d questions, %d near misses, %d off-topic; want at least 60, 24, 4", n, total["near-miss"], total["off-topic"])
	}
	// Stratified: each category splits evenly, within one question.
	for c := range total {
		var a, b int
		for _, q := range halves[tuneFile] {
			if q.Category == c {
				a++
			}
		}
		for _, q := range halves[reportFile] {
			if q.Category == c {
				b++
			}
		}
		if a-b > 1 || b-a > 1 {
			t.Errorf("%s: %d in the tuning half, %d in the reporting half", c, a, b)
		}
	}
}

// TestDevSetPages checks every expected source and page against the corpus manifest.
func TestDevSetPages(t *testing.T) {
	pages := manifestPages(t)
	for f, qs := range loadHalves(t) {
		for _, q := range qs {
			for _, turn := range q.Turns() {
				for _, src := range turn.ExpectedSources {
					n, ok := pages[src]
					if !ok {
						t.Errorf("%s: %s expects %q, which is not in the corpus", f, turn.ID, src)
					}
					for _, p := range turn.ExpectedPages[src] {
						if p > n {
							t.Errorf("%s: %s expects page %d of %s, which has %d", f, turn.ID, p, src, n)
						}
					}
					if len(turn.ExpectedPages[src]) == 0 {
						t.Errorf("%s: %s lists no page for %s", f, turn.ID, src)
					}
				}
			}
		}
	}
}

// manifestPages reads the page count of each paper (by document name) from the corpus
// manifest.
func manifestPages(t *testing.T) map[string]int {
	t.Helper()
	dir := corpustest.Papers(t)
	f, err := os.Open(filepath.Join(filepath.Dir(dir), "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pages := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 4 || cols[0] == "file" {
			continue
		}
		n, err := strconv.Atoi(cols[3])
		if err != nil {
			t.Fatalf("manifest: %q: %v", sc.Text(), err)
		}
		pages[strings.TrimSuffix(filepath.Base(cols[0]), ".pdf")] = n
	}
	if len(pages) == 0 {
		t.Fatal("empty manifest")
	}
	return pages
}
