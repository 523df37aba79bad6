package app

import (
	"fmt"
	"github.com/attend-nmt/attend/kernels"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/internal/bound"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/model"
)

// Streams are where a command reads and writes: its standard input, output and error, and the display of its
// progress (nil: none).
type Streams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Progress       PhaseRecorder
}

// startPhase begins a phase on s.Progress, or one that shows nothing.
func (s Streams) startPhase(name string, total int64, unit string) Phase {
	return orNoPhases(s.Progress).StartPhase(name, total, unit)
}

// files are the files a command opens and creates, which close closes.
type files struct {
	in  []io.Closer
	out []*os.File
}

// open opens the file at path for reading (.gz is read directly), or stdin for "-", with the name its errors
// use.
func (fs *files) open(path string, stdin io.Reader) (NamedReader, error) {
	if path == "-" {
		return NamedReader{R: stdin, Name: "stdin"}, nil
	}
	f, err := data.Open(path)
	if err != nil {
		return NamedReader{}, err
	}
	fs.in = append(fs.in, f)
	return NamedReader{R: f, Name: path}, nil
}

// create creates the file at path.
func (fs *files) create(path string) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	fs.out = append(fs.out, f)
	return f, nil
}

// close closes the files and sets *err to the first failed close of a created file unless it already holds an
// error: a failed close (a full disk) loses what was written.
func (fs *files) close(err *error) {
	for _, f := range fs.in {
		f.Close()
	}
	for _, f := range fs.out {
		if cerr := f.Close(); cerr != nil && *err == nil {
			*err = cerr
		}
	}
}

// filter opens the input of a command that turns it into an output ("" or "-": s.Stdin) and creates the
// output at outPath ("": s.Stdout).
func (fs *files) filter(inPath, outPath string, s Streams) (NamedReader, io.Writer, error) {
	if inPath == "" {
		inPath = "-"
	}
	in, err := fs.open(inPath, s.Stdin)
	if err != nil {
		return NamedReader{}, nil, err
	}
	out, err := fs.orStdout(outPath, s.Stdout)
	return in, out, err
}

// orStdout is the file created at path, or stdout when path is empty.
func (fs *files) orStdout(path string, stdout io.Writer) (io.Writer, error) {
	if path == "" {
		return stdout, nil
	}
	return fs.create(path)
}

// LoadModels loads the checkpoints of --model: one, or several to translate with as an ensemble, which
// model.NewEnsemble refuses when two of them read or write different text or mix recurrent models and
// Transformers. It returns the first checkpoint,
// whose vocabularies, tokenizer, decode settings and attention are the translation's, and the ensemble of all
// of them, nil for one.
func LoadModels(paths []string) (*model.Checkpoint, *model.Ensemble, error) {
	var cks []*model.Checkpoint
	for _, path := range paths {
		ck, err := model.Load(path)
		if err != nil {
			return nil, nil, err
		}
		cks = append(cks, ck)
	}
	if len(cks) == 1 {
		return cks[0], nil, nil
	}
	ens, err := model.NewEnsemble(paths, cks)
	if err != nil {
		return nil, nil, err
	}
	return cks[0], ens, nil
}

// namedPaths names each of paths by role (the checkpoints of --model), for CheckOutputs.
func namedPaths(role string, paths []string) []NamedPath {
	var named []NamedPath
	for _, p := range paths {
		named = append(named, NamedPath{Role: role, Path: p})
	}
	return named
}

// DefaultBeam is the beam width of translate, eval, heatmap and serve.
const DefaultBeam = 5

// SearchFlags are the search settings that translate, eval, heatmap and serve read from their command lines.
// A zero MaxLen or Batch takes the checkpoint's decode.max_len or decode.batch; Alpha is the checkpoint's
// decode.alpha unless AlphaGiven. The ...Given fields say which flags the command line gave, since a flag
// given its zero value is checked where one not given is not.
type SearchFlags struct {
	MaxLen, Batch int
	Beam, NBest   int
	Alpha, Beta   float64
	MaxLenRatio   float64
	ReplaceUnk    bool
	Shortlist     string            // "FREQUENT,BEST", or "" for the whole vocabulary
	Precision     kernels.Precision // --precision: the output layer's products (kernels.Choose)
	Threads       int               // 0: every core
	// Layer is the Transformer decoder block whose attention is reported (1 to model.layers; 0: the checkpoint's
	// model.attention_layer).
	Layer int

	MaxLenGiven, BatchGiven, NBestGiven, AlphaGiven, BetaGiven bool
}

// parseShortlist reads --shortlist F,K.
func parseShortlist(v string) (*lexicon.ShortlistSize, error) {
	if v == "" {
		return nil, nil
	}
	f, k, ok := strings.Cut(v, ",")
	frequent, err1 := strconv.Atoi(strings.TrimSpace(f))
	best, err2 := strconv.Atoi(strings.TrimSpace(k))
	if !ok || err1 != nil || err2 != nil || frequent < 0 || best < 0 || frequent == 0 && best == 0 {
		return nil, fmt.Errorf("--shortlist is %q; want F,K: the number of most frequent target words and of translations per source word, e.g. 100,20", v)
	}
	return &lexicon.ShortlistSize{Frequent: frequent, Best: best}, nil
}

// Options checks the flags against the checkpoint loaded from path and fills in its defaults; ens, when not
// nil, is the ensemble that translates (ck being its first model). Notes (a beam cut to the vocabulary) go to
// stderr. It also holds the process to Threads (UseThreads).
func (d SearchFlags) Options(stderr io.Writer, path string, ck *model.Checkpoint, ens *model.Ensemble) (DecodeOptions, error) {
	cfg := ck.Config
	if d.Threads < 0 {
		return DecodeOptions{}, fmt.Errorf("--threads is %d; want 0 (every core) or more", d.Threads)
	}
	if d.MaxLenGiven && d.MaxLen < 1 {
		return DecodeOptions{}, fmt.Errorf("--max-len is %d; want at least 1", d.MaxLen)
	}
	if d.BatchGiven && d.Batch < 1 {
		return DecodeOptions{}, fmt.Errorf("--batch is %d; want at least 1", d.Batch)
	}
	if d.Beam < 1 {
		return DecodeOptions{}, fmt.Errorf("--beam is %d; want at least 1", d.Beam)
	}
	if d.NBestGiven && (d.NBest < 1 || d.NBest > d.Beam) {
		return DecodeOptions{}, fmt.Errorf("--n-best is %d; want 1 to --beam (%d)", d.NBest, d.Beam)
	}
	// The penalties' weights and the length ratio, in the ranges the config's decode.alpha and serve's requests
	// hold to: an infinite or NaN weight makes every score -Inf, NaN or 0, a negative one rewards what the penalty
	// is there to punish, and a huge ratio's product with a length overflows. (The command line's flags are
	// checked as they are read; these are for the callers that fill SearchFlags themselves.)
	for _, p := range []struct {
		flag  string
		given bool
		r     bound.Range
		value float64
	}{{"alpha", d.AlphaGiven, decoder.AlphaRange(), d.Alpha}, {"beta", d.BetaGiven, decoder.BetaRange(), d.Beta},
		{"max-len-ratio", true, decoder.LengthRatioRange(), d.MaxLenRatio}} {
		if p.given {
			if err := p.r.Check("--"+p.flag, p.value); err != nil {
				return DecodeOptions{}, err
			}
		}
	}
	// A beam wider than the target vocabulary keeps no more distinct first words than there are words, and
	// costs beam × batch rows of the vocabulary's width in memory: it is cut to the vocabulary.
	if v := ck.Model.TgtVocab.Size(); d.Beam > v {
		fmt.Fprintf(stderr, "note: --beam %d is more than the model's %d target words; using --beam %d\n", d.Beam, v, v)
		d.Beam = v
		if d.NBest > v {
			fmt.Fprintf(stderr, "note: --n-best %d is more than --beam %d; using --n-best %d\n", d.NBest, v, v)
			d.NBest = v
		}
	}
	if d.Layer != 0 {
		if err := ck.Model.SetAttentionLayer(d.Layer); err != nil {
			return DecodeOptions{}, fmt.Errorf("--layer %d: %w", d.Layer, err)
		}
	}
	precision, err := kernels.ParsePrecision(string(d.Precision))
	if err != nil {
		return DecodeOptions{}, fmt.Errorf("--precision: %w", err)
	}
	short, err := parseShortlist(d.Shortlist)
	if err != nil {
		return DecodeOptions{}, err
	}
	if keep := lexicon.DefaultOptions().Keep; short != nil && short.Best > keep {
		return DecodeOptions{}, fmt.Errorf("--shortlist is %q: K is %d, but the lexicon keeps at most %d translations of each source word; want K from 0 to %d",
			d.Shortlist, short.Best, keep, keep)
	}
	o := DecodeOptions{MaxLen: cfg.Decode.MaxLen, Batch: cfg.Decode.Batch, Beam: d.Beam, NBest: d.NBest,
		Alpha: cfg.Decode.Alpha, Beta: d.Beta, MaxLenRatio: d.MaxLenRatio, ReplaceUnk: d.ReplaceUnk, Shortlist: short,
		Precision: precision, Ensemble: ens}
	if d.MaxLen > 0 {
		o.MaxLen = d.MaxLen
	}
	if d.Batch > 0 {
		o.Batch = d.Batch
	}
	if d.AlphaGiven {
		o.Alpha = d.Alpha
	}
	if err := o.Validate(); err != nil {
		return DecodeOptions{}, err
	}
	if err := o.CheckModel(path, ck.Model); err != nil {
		return DecodeOptions{}, err
	}
	UseThreads(stderr, d.Threads, "--threads")
	return o, nil
}

// lengthLimit is the length limit of the pairs a command scores or draws: --max-len when given, else
// LengthLimit of the checkpoint's config.
func (d SearchFlags) lengthLimit(cfg model.Config) int {
	if d.MaxLen > 0 {
		return d.MaxLen
	}
	return LengthLimit(cfg)
}

// inputLines counts the lines of an input (data.Lines), for a progress total: of the file at path (.gz read
// through), or, when path is empty, of stdin, when it is a regular file (stdin from where it stands, without
// moving it). It is 0 when that is not known (a pipe, a FIFO, a terminal, a device such as /dev/zero, which would
// never end) or the input cannot be read (the command then reports that itself).
func inputLines(path string, stdin io.Reader) int64 {
	var r io.Reader
	if path != "" {
		if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() {
			return 0 // a FIFO's lines are the command's to read; /dev/zero has no end to count to
		}
		f, err := data.Open(path)
		if err != nil {
			return 0
		}
		defer f.Close()
		r = f
	} else {
		f, ok := stdin.(*os.File)
		if !ok {
			return 0
		}
		info, err := f.Stat()
		if err != nil || !info.Mode().IsRegular() {
			return 0
		}
		at, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0
		}
		r = io.NewSectionReader(f, at, info.Size()-at)
	}
	lines := data.NewLines(r, path)
	var n int64
	for lines.Scan() {
		n++
	}
	if lines.Err() != nil {
		return 0
	}
	return n
}
