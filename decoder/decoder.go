// Package decoder predicts target words one step at a time from the previous word, the decoder state and the
// attention context: the decoder step (step.go; translation and the fused training op share it), teacher-forced
// scoring, and greedy and beam search (search.go), which return the attention weights of every emitted word,
// written once on the Session interface that this decoder and the Transformer implement, over one model or an
// ensemble of them; greedy and beam search keep one running batch (greedy.go) full, refilling a sentence's rows
// as soon as it ends, where the Sessions are Joiners (this decoder's are), the two differing only in how they
// choose the step's words (beam.go for beam search's).
package decoder

import (
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// Config gives the decoder's sizes.
type Config struct {
	Vocab  int // target vocabulary size
	Emb    int // target embedding width
	Hidden int // LSTM units
	MemDim int // width of an encoder state (2 × encoder hidden)
	Attn   int // width of the additive attention layer
	// Attention names the attention function (align.Registry); "" is the additive score.
	Attention string
	Window    int // half-width of local attention's window
	Heads     int // heads of multi-head attention
	// Temperature is τ of hard attention's Gumbel-softmax.
	Temperature float64
	// InputFeeding adds the attentional vector f_t = tanh(A [s_t; c_t] + a) (Luong et al. 2015, as OpenNMT-py's
	// input_feed): f_{t-1} joins the LSTM input at step t, and the output layer reads f_t in place of s_t.
	InputFeeding bool
	// Layers is the number of stacked LSTM layers (0 counts as 1). The first attends and reads [emb(y_{t-1});
	// c_t]; each layer above reads [output of the layer below ; c_t] (GNMT's stacking, Wu et al. 2016: the
	// context reaches every layer, the bottom one alone attends), with dropout on that input in training; the
	// output layer reads the top layer's state.
	Layers int
	// AttendAfterInput attends in Luong et al.'s order (2015; OpenNMT-py's decoder): the first LSTM layer reads
	// [emb(y_{t-1}) (; f_{t-1})], without the context, and its new state s_t, which has seen y_{t-1}, is the
	// attention's query. Without it the query is s_{t-1}, the state before the step, and the context c_t joins
	// the LSTM's input (Bahdanau et al. 2015). Either way c_t goes to input feeding, to the upper layers and to
	// the output layer.
	AttendAfterInput bool
	// FullContextAlignment adds an alignment attention (Garg et al. 2019; fairseq's full-context alignment) for
	// guided alignment to train and for word alignment to read: at step t it is the decoder's attention function,
	// with the same weights, given the query of the step plus emb(y_t)·AlignW — the step's query also knowing the
	// word being aligned, which the decoder's own attention cannot know before it predicts that word. It does not
	// feed the decoder: translation is unchanged by it. It needs an attention without state.
	FullContextAlignment bool
}

// UpperLayer is the weights of one decoder LSTM layer above the first: it reads [h_below ; c_t].
type UpperLayer[T kernels.Float] struct {
	InputW  *param.Tensor[T] // (4, Hidden+MemDim, Hidden)
	HiddenW *param.Tensor[T] // (4, Hidden, Hidden)
	Bias    *param.Tensor[T] // (4, Hidden)
}

// Decoder holds the target embeddings, the bridge from the encoder's final states, the attention score, the
// LSTM cell over [emb(y_{t-1}); context] and the output layer over [s_t; context; emb(y_{t-1})]. With input
// feeding the LSTM reads [emb(y_{t-1}); context; f_{t-1}] and the output layer [f_t; context; emb(y_{t-1})].
// With Config.AttendAfterInput the LSTM reads no context: it reads [emb(y_{t-1})] or [emb(y_{t-1}); f_{t-1}].
// With more layers, each upper layer reads [output of the layer below; context], and the output layer reads
// the top layer's state in place of s_t (or f_t).
type Decoder[T kernels.Float] struct {
	Cfg                Config
	Emb                *param.Tensor[T] // (Vocab, Emb)
	BridgeHW, BridgeHB *param.Tensor[T] // (MemDim, Hidden), (Hidden): s_0 = tanh(W [h_fwd ; h_bwd] + b)
	BridgeCW, BridgeCB *param.Tensor[T] // (MemDim, Hidden), (Hidden): c_0 = tanh(W [c_fwd ; c_bwd] + b)
	Attn               align.Attention[T]
	// InputW is (4, In, Hidden) with In = Emb+MemDim (+Hidden with input feeding): rows [0,Emb) read the
	// embedding, the next MemDim the context, the last Hidden f_{t-1}. With Config.AttendAfterInput there are no
	// context rows: In = Emb (+Hidden).
	InputW  *param.Tensor[T]
	HiddenW *param.Tensor[T] // (4, Hidden, Hidden)
	Bias    *param.Tensor[T] // (4, Hidden)
	OutW    *param.Tensor[T] // (Hidden+MemDim+Emb, Vocab): rows read s_t, then the context, then the embedding
	OutB    *param.Tensor[T] // (Vocab)
	// FeedW (Hidden+MemDim, Hidden) and FeedB (Hidden) make the attentional vector f_t = tanh([s_t; c_t] FeedW +
	// FeedB); nil without input feeding.
	FeedW, FeedB *param.Tensor[T]
	// Upper are the layers above the first, bottom up; empty with one layer.
	Upper []UpperLayer[T]
	// AlignW (Emb, Hidden) turns the embedding of the word being aligned into a term of the alignment
	// attention's query (Config.FullContextAlignment); nil without.
	AlignW *param.Tensor[T]

	bf16   *bf16Output // the searches' output layer in bfloat16 (bf16For), or nil until one asks for it
	bf16Mu sync.Mutex  // guards bf16
}

// New registers the decoder's parameters in set ("tgt_emb", "bridge.*", "attn.*", "dec.*", "out.*", and
// "dec.lN.*" for each layer N ≥ 2), taking the attention function cfg.Attention from scores (nil: align.Builtin).
// An unknown attention function is an error.
func New[T kernels.Float](set *param.Set[T], cfg Config, scores align.Registry[T]) (*Decoder[T], error) {
	if scores == nil {
		scores = align.Builtin[T]()
	}
	h := cfg.Hidden
	name := cfg.Attention
	if name == "" {
		name = "additive"
	}
	d := &Decoder[T]{Cfg: cfg,
		Emb:      set.Add("tgt_emb", cfg.Vocab, cfg.Emb),
		BridgeHW: set.Add("bridge.h.w", cfg.MemDim, h), BridgeHB: set.Add("bridge.h.b", h),
		BridgeCW: set.Add("bridge.c.w", cfg.MemDim, h), BridgeCB: set.Add("bridge.c.b", h),
	}
	attn, err := scores.New(name, set, align.Config{MemDim: cfg.MemDim, QueryDim: h, Dim: cfg.Attn, Window: cfg.Window, Heads: cfg.Heads, Temperature: cfg.Temperature})
	if err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	d.Attn = attn
	d.InputW = set.Add("dec.w_ih", 4, d.InputWidth(), h)
	d.HiddenW = set.Add("dec.w_hh", 4, h, h)
	d.Bias = set.Add("dec.b", 4, h)
	d.Bias.Copies = 2 // PyTorch's b_ih + b_hh, trained as the pair (see param.Tensor.Copies)
	d.OutW = set.Add("out.w", h+cfg.MemDim+cfg.Emb, cfg.Vocab)
	d.OutB = set.Add("out.b", cfg.Vocab)
	if cfg.InputFeeding {
		d.FeedW = set.Add("dec.feed.w", h+cfg.MemDim, h)
		d.FeedB = set.Add("dec.feed.b", h)
	}
	for l := 2; l <= max(cfg.Layers, 1); l++ {
		prefix := fmt.Sprintf("dec.l%d.", l)
		u := UpperLayer[T]{InputW: set.Add(prefix+"w_ih", 4, h+cfg.MemDim, h), HiddenW: set.Add(prefix+"w_hh", 4, h, h),
			Bias: set.Add(prefix+"b", 4, h)}
		u.Bias.Copies = 2 // as the first layer's
		d.Upper = append(d.Upper, u)
	}
	if cfg.FullContextAlignment {
		if attn.StateWidth() > 0 {
			return nil, fmt.Errorf("decoder: full-context alignment needs an attention without state; %s has one", name)
		}
		d.AlignW = set.Add("dec.align.w", cfg.Emb, h)
	}
	return d, nil
}

// InputWidth is the width of the LSTM input: [emb; context], and f_{t-1} with input feeding; without the
// context with Config.AttendAfterInput.
func (d *Decoder[T]) InputWidth() int {
	if d.Cfg.InputFeeding {
		return d.Cfg.Emb + d.contextIn() + d.Cfg.Hidden
	}
	return d.Cfg.Emb + d.contextIn()
}

// contextIn is the width of the context in the LSTM input: MemDim, or 0 with Config.AttendAfterInput.
func (d *Decoder[T]) contextIn() int {
	if d.Cfg.AttendAfterInput {
		return 0
	}
	return d.Cfg.MemDim
}

// OutIn is the width of the output layer's input [s_t; context; emb].
func (d *Decoder[T]) OutIn() int { return d.Cfg.Hidden + d.Cfg.MemDim + d.Cfg.Emb }

// Init draws the weights as PyTorch does for the same layers.
func (d *Decoder[T]) Init(rng *rand.Rand) {
	param.Normal(d.Emb, 1, rng)
	clear(d.Emb.Data[:d.Cfg.Emb]) // row 0 is <pad>
	for _, t := range []*param.Tensor[T]{d.BridgeHW, d.BridgeHB, d.BridgeCW, d.BridgeCB} {
		param.Uniform(t, param.InvSqrt(d.Cfg.MemDim), rng)
	}
	d.Attn.Init(rng)
	for _, t := range []*param.Tensor[T]{d.InputW, d.HiddenW, d.Bias} {
		param.Uniform(t, param.InvSqrt(d.Cfg.Hidden), rng)
	}
	param.Uniform(d.OutW, param.InvSqrt(d.OutIn()), rng)
	param.Uniform(d.OutB, param.InvSqrt(d.OutIn()), rng)
	if d.FeedW != nil {
		param.Uniform(d.FeedW, param.InvSqrt(d.Cfg.Hidden+d.Cfg.MemDim), rng)
		param.Uniform(d.FeedB, param.InvSqrt(d.Cfg.Hidden+d.Cfg.MemDim), rng)
	}
	// As PyTorch's LSTM, whose bias is the sum b_ih + b_hh of two such draws.
	for _, u := range d.Upper {
		param.Uniform(u.InputW, param.InvSqrt(d.Cfg.Hidden), rng)
		param.Uniform(u.HiddenW, param.InvSqrt(d.Cfg.Hidden), rng)
		param.UniformSum(u.Bias, param.InvSqrt(d.Cfg.Hidden), rng)
	}
	// The first layer's cell has one bias where PyTorch's LSTMCell has two, b_ih + b_hh, each uniform in
	// ±1/sqrt(H): it is drawn again, last, as their sum. (The first draw above is kept so that the weights drawn
	// from a seed stay those of earlier versions.)
	param.UniformSum(d.Bias, param.InvSqrt(d.Cfg.Hidden), rng)
	if d.AlignW != nil {
		clear(d.AlignW.Data) // the alignment attention starts as the decoder's own
	}
}

// Memory is what the decoder attends over for one batch: the encoder states, their precomputed keys and the
// source lengths. Its buffers may hold more rows than Rows (len(Lengths) of them, SrcLen positions each), which
// searches that refill or drop rows use.
type Memory[T kernels.Float] struct {
	Rows, SrcLen     int
	MemDim, KeyWidth int // widths of an encoder state and of a key
	States           []T // (Rows, SrcLen, MemDim)
	Keys             []T // the scorer's keys, (Rows, SrcLen, KeyWidth)
	Lengths          []int
}

// CopyRow sets row dst of m to row src of from (which may be m itself): its encoder states, keys and length.
// The two may have different source lengths: m's positions past from.SrcLen become zero, and from's positions
// past m.SrcLen, which must be padding, are left out. It panics if the row is longer than m.SrcLen or the
// widths differ.
func (m *Memory[T]) CopyRow(dst int, from *Memory[T], src int) {
	s, fs, md, kw := m.SrcLen, from.SrcLen, m.MemDim, m.KeyWidth
	if from.Lengths[src] > s || from.MemDim != md || from.KeyWidth != kw {
		panic(fmt.Sprintf("decoder: Memory.CopyRow of a row of %d words, widths %d+%d, into source length %d, widths %d+%d",
			from.Lengths[src], from.MemDim, from.KeyWidth, s, md, kw))
	}
	n := min(s, fs)
	copyPositions(m.States[dst*s*md:(dst+1)*s*md], from.States[src*fs*md:(src*fs+n)*md])
	copyPositions(m.Keys[dst*s*kw:(dst+1)*s*kw], from.Keys[src*fs*kw:(src*fs+n)*kw])
	m.Lengths[dst] = from.Lengths[src]
}

// copyPositions copies src to the start of dst and zeroes the rest of dst. src may overlap dst.
func copyPositions[T kernels.Float](dst, src []T) {
	clear(dst[copy(dst, src):])
}

// SetSrcLen changes the padded source length of the first Rows rows of m to srcLen, keeping each row's states,
// keys and length; new positions are zero. The buffers keep room for len(Lengths) rows and are reallocated
// when too short. It panics if a row is longer than srcLen.
func (m *Memory[T]) SetSrcLen(srcLen int) {
	for r, n := range m.Lengths[:m.Rows] {
		if n > srcLen {
			panic(fmt.Sprintf("decoder: Memory.SetSrcLen(%d) with row %d of %d words", srcLen, r, n))
		}
	}
	rows := len(m.Lengths)
	m.States = restride(m.States, m.Rows, rows, m.SrcLen, srcLen, m.MemDim)
	m.Keys = restride(m.Keys, m.Rows, rows, m.SrcLen, srcLen, m.KeyWidth)
	m.SrcLen = srcLen
}

// restride returns buf (room for capRows rows of old positions of width values) with its first rows rows
// re-laid out for srcLen positions, new positions zero and positions past srcLen dropped; it is reallocated
// when too short for capRows rows of srcLen positions.
func restride[T kernels.Float](buf []T, rows, capRows, old, srcLen, width int) []T {
	keep := min(old, srcLen) * width
	if need := capRows * srcLen * width; cap(buf) < need {
		grown := make([]T, need, need+need/4) // room for a few more positions: a running batch's padding creeps up
		for r := 0; r < rows; r++ {
			copy(grown[r*srcLen*width:], buf[r*old*width:r*old*width+keep])
		}
		return grown
	}
	buf = buf[:max(len(buf), capRows*srcLen*width)]
	if srcLen > old { // rows move right: the last first
		for r := rows - 1; r >= 0; r-- {
			copyPositions(buf[r*srcLen*width:(r+1)*srcLen*width], buf[r*old*width:r*old*width+keep])
		}
	} else { // rows move left: the first first
		for r := 0; r < rows; r++ {
			copy(buf[r*srcLen*width:], buf[r*old*width:r*old*width+keep])
		}
	}
	return buf[:capRows*srcLen*width]
}

// State is the decoder's recurrent state for a batch: H is s_t and C the LSTM cell, both (Rows, Hidden); Feed is
// the attentional vector f_t (Rows, Hidden) with input feeding, nil without; UpperH and UpperC hold the state
// and cell of each layer above the first, (Rows, Hidden) each; Attn is the attention's state (Rows,
// SrcLen·AttnWidth), nil when it has none. Its buffers may hold more rows than Rows.
type State[T kernels.Float] struct {
	Rows, Hidden      int
	H, C, Feed        []T
	UpperH, UpperC    [][]T
	Attn              []T
	SrcLen, AttnWidth int
}

// view points v at the rows [from, to) of s, without copying: a part of the batch that one goroutine steps.
// Like CopyRow it knows every per-row field of State.
func (s *State[T]) view(v *State[T], from, to int) {
	h, aw := s.Hidden, s.SrcLen*s.AttnWidth
	v.Rows, v.Hidden, v.H, v.C, v.Feed = to-from, h, s.H[from*h:to*h], s.C[from*h:to*h], nil
	v.SrcLen, v.AttnWidth, v.Attn = s.SrcLen, s.AttnWidth, s.Attn[from*aw:to*aw]
	if s.Feed != nil {
		v.Feed = s.Feed[from*h : to*h]
	}
	if len(v.UpperH) != len(s.UpperH) { // once per view: a view is reused from step to step
		v.UpperH, v.UpperC = make([][]T, len(s.UpperH)), make([][]T, len(s.UpperC))
	}
	for l := range s.UpperH {
		v.UpperH[l], v.UpperC[l] = s.UpperH[l][from*h:to*h], s.UpperC[l][from*h:to*h]
	}
}

// view points v at the rows [from, to) of m, without copying.
func (m *Memory[T]) view(v *Memory[T], from, to int) {
	s, md, kw := m.SrcLen, m.MemDim, m.KeyWidth
	*v = Memory[T]{Rows: to - from, SrcLen: s, MemDim: md, KeyWidth: kw, States: m.States[from*s*md : to*s*md],
		Keys: m.Keys[from*s*kw : to*s*kw], Lengths: m.Lengths[from:to]}
}

// newState allocates a zero state of rows rows over srcLen source positions.
func (d *Decoder[T]) newState(rows, srcLen int) *State[T] {
	h, aw := d.Cfg.Hidden, d.Attn.StateWidth()
	st := &State[T]{Rows: rows, Hidden: h, H: make([]T, rows*h), C: make([]T, rows*h), SrcLen: srcLen, AttnWidth: aw}
	if d.Cfg.InputFeeding {
		st.Feed = make([]T, rows*h) // f_0 = 0
	}
	for range d.Upper { // the upper layers start from zero states
		st.UpperH = append(st.UpperH, make([]T, rows*h))
		st.UpperC = append(st.UpperC, make([]T, rows*h))
	}
	if aw > 0 {
		st.Attn = make([]T, rows*srcLen*aw)
	}
	return st
}

// CopyRow sets row dst of s to row src of from (which may be s itself). Every per-row field of State is copied
// here, and only here, so that the searches which move, gather or refill rows need not know them. The
// attention's state is copied position by position, as Memory.CopyRow copies the memory: s's positions past
// from.SrcLen become zero, from's past s.SrcLen are left out (an attention's state is zero past a row's length).
func (s *State[T]) CopyRow(dst int, from *State[T], src int) {
	h := s.Hidden
	if from.Hidden != h || from.AttnWidth != s.AttnWidth {
		panic(fmt.Sprintf("decoder: State.CopyRow from widths %d+%d to %d+%d", from.Hidden, from.AttnWidth, h, s.AttnWidth))
	}
	copy(s.H[dst*h:(dst+1)*h], from.H[src*h:(src+1)*h])
	copy(s.C[dst*h:(dst+1)*h], from.C[src*h:(src+1)*h])
	if s.Feed != nil {
		copy(s.Feed[dst*h:(dst+1)*h], from.Feed[src*h:(src+1)*h])
	}
	for l := range s.UpperH {
		copy(s.UpperH[l][dst*h:(dst+1)*h], from.UpperH[l][src*h:(src+1)*h])
		copy(s.UpperC[l][dst*h:(dst+1)*h], from.UpperC[l][src*h:(src+1)*h])
	}
	if w := s.AttnWidth; w > 0 {
		sw, fw := s.SrcLen*w, from.SrcLen*w
		copyPositions(s.Attn[dst*sw:(dst+1)*sw], from.Attn[src*fw:src*fw+min(sw, fw)])
	}
}

// SetSrcLen changes the padded source length of the attention's state of the first Rows rows to srcLen, as
// Memory.SetSrcLen does the memory's; it does nothing when the attention has no state.
func (s *State[T]) SetSrcLen(srcLen int) {
	if s.AttnWidth > 0 {
		s.Attn = restride(s.Attn, s.Rows, len(s.H)/s.Hidden, s.SrcLen*s.AttnWidth, srcLen*s.AttnWidth, 1)
	}
	s.SrcLen = srcLen
}

// Start builds the attention memory and the initial state s_0, c_0 from the encoder output.
func (d *Decoder[T]) Start(enc *encoder.Output[T], lengths []int) (*Memory[T], *State[T]) {
	rows := enc.Rows
	mem := &Memory[T]{Rows: rows, SrcLen: enc.SrcLen, MemDim: d.Cfg.MemDim, KeyWidth: d.Attn.KeyWidth(),
		States: enc.Memory, Lengths: lengths, Keys: make([]T, rows*enc.SrcLen*d.Attn.KeyWidth())}
	d.Attn.Keys(enc.Memory, lengths, rows, enc.SrcLen, mem.Keys)
	st := d.newState(rows, enc.SrcLen)
	d.bridge(enc.FinalH, d.BridgeHW, d.BridgeHB, rows, st.H)
	d.bridge(enc.FinalC, d.BridgeCW, d.BridgeCB, rows, st.C)
	return mem, st
}

// Scratch is the working memory of Step, allocated once per batch by NewScratch and reused at every step; the
// fused training op uses one too, for what its steps do not keep.
type Scratch[T kernels.Float] struct {
	emb, ctx, gates, outIn []T
	feedIn                 []T // [s_t; c_t] rows with input feeding
	upperIn                []T // [h_below; c_t] rows with more than one layer
	work                   []T // the attention's, for the full batch
	next                   []T // the attention's next state
	dTop                   []T // training: the gradient of a layer's output
	query                  []T // the attention's query of the last step (rows, Hidden)
	// alignEmb, alignQuery and alignCtx (rows × Emb, Hidden, MemDim) are the alignment attention's
	// (Config.FullContextAlignment); nil without.
	alignEmb, alignQuery, alignCtx []T
	// gateIn is the first layer's input and previous state side by side, [emb; (ctx;) (f_{t-1};) s_{t-1}]
	// (rows, InputWidth+Hidden), and gateW the weights that turn it into the four gates in one product:
	// gateWeights' copy of InputW and HiddenW, taken when the scratch is made.
	gateIn, gateW []T
	// gateProduct and gateProductT, when not nil (training on float32 arenas with split AMX products, or on
	// training workers' arenas where AVX-512 runs: kernels.Arena.PackWeights), hold gateW and gateWᵀ packed once a
	// step: the step's gate product and its backward one run on them.
	gateProduct, gateProductT kernels.WeightProduct
	none                      stepCache[T] // the cache of inference, which keeps nothing
}

// NewScratch allocates Step's working memory for a batch of rows and source length srcLen. It copies the
// weights of the LSTM cell into one matrix, so Step works with the weights as they were when the scratch was
// made: a scratch must not outlive an update of the weights.
func (d *Decoder[T]) NewScratch(rows, srcLen int) *Scratch[T] { return d.newScratch(rows, srcLen, nil) }

// newScratch is NewScratch reusing gateW, the result of gateWeights for the current weights, when it is not nil.
func (d *Decoder[T]) newScratch(rows, srcLen int, gateW []T) *Scratch[T] {
	b := d.scratch(rows, srcLen, func(name string, n int) []T {
		if name == "gateW" && gateW != nil {
			return gateW
		}
		return make([]T, n)
	})
	if gateW == nil {
		d.gateWeights(b.gateW)
	}
	return b
}

// scratch makes a Scratch for rows rows and srcLen source positions, each buffer taken from get(name, size); it
// leaves gateW as get gives it.
func (d *Decoder[T]) scratch(rows, srcLen int, get func(name string, n int) []T) *Scratch[T] {
	h, md := d.Cfg.Hidden, d.Cfg.MemDim
	b := &Scratch[T]{emb: get("emb", rows*d.Cfg.Emb), ctx: get("sctx", rows*md), gates: get("gates", rows*4*h),
		outIn: get("outIn", rows*d.OutIn()), work: get("swork", d.Attn.WorkSize(rows, srcLen)),
		next: get("next", rows*srcLen*d.Attn.StateWidth()), dTop: get("dTop", rows*h), query: get("squery", rows*h),
		gateIn: get("sgateIn", rows*(d.InputWidth()+h)), gateW: get("gateW", (d.InputWidth()+h)*4*h)}
	if d.Cfg.InputFeeding {
		b.feedIn = get("sfeedIn", rows*(h+md))
	}
	if len(d.Upper) > 0 {
		b.upperIn = get("upperIn", rows*(h+md))
	}
	if d.AlignW != nil {
		// (named apart from the fused op's per-step buffers, which share the arena)
		b.alignEmb, b.alignQuery, b.alignCtx = get("salignEmb", rows*d.Cfg.Emb), get("salignQuery", rows*h), get("salignCtx", rows*md)
	}
	return b
}

// gateWeights lays the first layer's W_ih (4, InputWidth, Hidden) and W_hh (4, Hidden, Hidden) out as one
// matrix w (InputWidth+Hidden, 4·Hidden): row i holds input i's weight into every gate, gate k in columns
// k·Hidden … (k+1)·Hidden-1, the layout of the gates in Scratch.gates.
func (d *Decoder[T]) gateWeights(w []T) {
	h, in := d.Cfg.Hidden, d.InputWidth()
	kernels.GateMajor(d.InputW.Data, 4, in, h, w[:in*4*h])
	kernels.GateMajor(d.HiddenW.Data, 4, h, h, w[in*4*h:])
}

// Step advances the decoder by one word for every row: prev holds y_{t-1} (rows). It attends with s_{t-1} (s_t
// with Config.AttendAfterInput), updates st in place to s_t, and writes the output logits (rows, Vocab) and the
// attention weights (rows, SrcLen).
func (d *Decoder[T]) Step(st *State[T], prev []int, mem *Memory[T], buf *Scratch[T], logits, weights []T) {
	rows := st.Rows
	if len(prev) != rows || len(logits) != rows*d.Cfg.Vocab || len(weights) != rows*mem.SrcLen {
		panic(fmt.Sprintf("decoder: Step got %d ids, %d logits, %d weights for %d rows", len(prev), len(logits), len(weights), rows))
	}
	d.advance(st, prev, mem, buf, weights)
	d.output(rows, buf.outIn, logits, 0, d.Cfg.Vocab)
}

// advance is Step up to the output layer, whose input [top; ctx; emb] (rows, OutIn) it leaves in buf.outIn. The
// buffers may be longer than rows: greedy search shrinks the batch as sentences finish.
func (d *Decoder[T]) advance(st *State[T], prev []int, mem *Memory[T], buf *Scratch[T], weights []T) {
	rows, h, e, md := st.Rows, d.Cfg.Hidden, d.Cfg.Emb, d.Cfg.MemDim
	kernels.Embed(d.Emb.Data, prev, e, buf.emb)
	d.step(st, mem, buf.emb, buf, weights, &buf.none)
	top, oi := d.top(st), d.OutIn()
	for r := 0; r < rows; r++ {
		row := buf.outIn[r*oi : (r+1)*oi]
		copy(row[:h], top[r*h:(r+1)*h])
		copy(row[h:h+md], buf.ctx[r*md:(r+1)*md])
		copy(row[h+md:], buf.emb[r*e:(r+1)*e])
	}
}

// output writes the columns [from, to) of the logits (rows, Vocab) of the output layer's inputs outIn
// (rows, OutIn); the other columns are left alone, so that parts of the vocabulary can be computed at once.
func (d *Decoder[T]) output(rows int, outIn, logits []T, from, to int) {
	// logits = [s_t; ctx; emb] · W_out + b_out
	v, oi := d.Cfg.Vocab, d.OutIn()
	kernels.Gemm(false, false, rows, to-from, oi, 1, outIn, oi, d.OutW.Data[from:], v, 0, logits[from:], v)
	kernels.AddBiasStrided(logits[from:], rows, v, d.OutB.Data[from:to])
}

// HeadCount is the number of heads of the attention's weights: 1 unless the scorer has several (align.HeadWeigher).
func (d *Decoder[T]) HeadCount() int {
	if hw, ok := d.Attn.(align.HeadWeigher[T]); ok {
		return hw.HeadCount()
	}
	return 1
}

// HeadWeights returns every head's weights (rows, HeadCount, srcLen) of the last Step that used buf, or nil when
// the attention has a single head (its weights are Step's).
func (d *Decoder[T]) HeadWeights(buf *Scratch[T], rows, srcLen int) []T {
	hw, ok := d.Attn.(align.HeadWeigher[T])
	if !ok {
		return nil
	}
	return hw.HeadWeights(buf.work[:d.Attn.WorkSize(rows, srcLen)], rows, srcLen)
}

// Forced is what teacher forcing computes at every step, time-major: the logits (tgtLen, rows, Vocab), the
// attention weights (tgtLen, rows, SrcLen), each head's weights (tgtLen, rows, heads, SrcLen; nil with one
// head) and the full-context alignment weights (tgtLen, rows, SrcLen; nil without Config.FullContextAlignment).
type Forced[T kernels.Float] struct {
	Logits, Weights, Heads, Alignment []T
}

// TeacherForced runs the decoder over a time-major target input tgtIn (tgtLen, rows) and returns the logits and
// attention weights of every step (Forced); with all also every head's weights, for attention with several
// heads, and, with Config.FullContextAlignment, the weights of the alignment attention at every step, the word
// aligned at step t being tgtOut[t] (tgtLen, rows; unread without all). It is the plain-Go reference of the
// training graph and the validation scorer.
func (d *Decoder[T]) TeacherForced(enc *encoder.Output[T], lengths []int, tgtIn, tgtOut []int, tgtLen int, all bool) Forced[T] {
	rows, v, sl := enc.Rows, d.Cfg.Vocab, enc.SrcLen
	mem, st := d.Start(enc, lengths)
	buf := d.NewScratch(rows, sl)
	f := Forced[T]{Logits: make([]T, tgtLen*rows*v), Weights: make([]T, tgtLen*rows*sl)}
	nh := d.HeadCount()
	if nh > 1 && all {
		f.Heads = make([]T, tgtLen*rows*nh*sl)
	}
	if d.AlignW != nil && all {
		f.Alignment = make([]T, tgtLen*rows*sl)
	}
	for t := 0; t < tgtLen; t++ {
		d.Step(st, tgtIn[t*rows:(t+1)*rows], mem, buf, f.Logits[t*rows*v:(t+1)*rows*v], f.Weights[t*rows*sl:(t+1)*rows*sl])
		if f.Heads != nil {
			copy(f.Heads[t*rows*nh*sl:(t+1)*rows*nh*sl], d.HeadWeights(buf, rows, sl))
		}
		if f.Alignment != nil {
			d.Align(mem, buf, tgtOut[t*rows:(t+1)*rows], f.Alignment[t*rows*sl:(t+1)*rows*sl])
		}
	}
	return f
}

// Align writes the full-context alignment weights (rows, SrcLen) of the step that Step last took with buf, the
// words it aligns (the step's output words, y_t) being words (rows): the attention function over mem given that
// step's query plus emb(y_t)·AlignW (Config.FullContextAlignment). It panics without FullContextAlignment.
func (d *Decoder[T]) Align(mem *Memory[T], buf *Scratch[T], words []int, weights []T) {
	if d.AlignW == nil {
		panic("decoder: Align without full-context alignment")
	}
	rows := len(words)
	kernels.Embed(d.Emb.Data, words, d.Cfg.Emb, buf.alignEmb)
	d.alignStep(mem, rows, buf.query[:rows*d.Cfg.Hidden], buf.alignEmb[:rows*d.Cfg.Emb], buf.alignQuery, buf.work, weights, buf.alignCtx)
}

// alignStep is the alignment attention of one step (Config.FullContextAlignment) for rows rows: it writes the
// query q = query + emb·AlignW into q and the weights (rows, SrcLen) into weights, using work and ctx (rows,
// MemDim; the context, which nothing reads) as its scratch.
func (d *Decoder[T]) alignStep(mem *Memory[T], rows int, query, emb, q, work, weights, ctx []T) {
	h, e, sl := d.Cfg.Hidden, d.Cfg.Emb, mem.SrcLen
	copy(q[:rows*h], query)
	kernels.Gemm(false, false, rows, h, e, 1, emb, e, d.AlignW.Data, h, 1, q, h)
	d.Attn.Step(align.Step[T]{Rows: rows, SrcLen: sl, Query: q[:rows*h], Keys: mem.Keys[:rows*sl*mem.KeyWidth],
		Memory: mem.States[:rows*sl*d.Cfg.MemDim], Lengths: mem.Lengths[:rows], Weights: weights, Context: ctx[:rows*d.Cfg.MemDim],
		Work: work[:d.Attn.WorkSize(rows, sl)]})
}
