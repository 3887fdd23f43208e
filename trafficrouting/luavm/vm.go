// Package luavm runs traffic-routing Lua scripts in a sandbox: only the base (minus loading and environment
// functions), table, string and math libraries plus a json module, a per-call timeout, bounded call and value
// stacks, and size caps on the builtins that can allocate large strings in one step.
package luavm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
)

var (
	// ErrTimeout is wrapped by the error of a call that ran out of time.
	ErrTimeout = errors.New("lua script timed out")
	// ErrScript is wrapped by compile errors, runtime errors, exceeded limits and return values that cannot be
	// decoded into the caller's type.
	ErrScript = errors.New("lua script failed")
)

// Defaults and fixed bounds. Traffic-routing scripts are a few KiB and handle objects of at most a few
// hundred KiB, so the bounds sit far above real use.
const (
	defaultTimeout         = time.Second
	defaultCallStackSize   = 200
	defaultRegistryMaxSize = 64 * 1024
	initialRegistrySize    = 1024
	maxScriptBytes         = 256 * 1024
	maxNesting             = 256
	maxArrayIndex          = 1 << 20
)

// limits bound what one Eval can allocate through strings, where a single builtin call could otherwise
// allocate gigabytes; a field of VM so tests can shrink them.
type limits struct {
	// str bounds one string a guarded builtin creates.
	str int
	// produced bounds the bytes all guarded builtins create in one call.
	produced int
	// patternSubject bounds subjects and patterns of the pattern-matching functions.
	patternSubject int
	// result bounds the converted return value (string bytes plus a few bytes per value).
	result int
}

var defaultLimits = limits{str: 4 << 20, produced: 128 << 20, patternSubject: 64 * 1024, result: 16 << 20}

// Options tune a VM; zero values pick the defaults.
type Options struct {
	// Timeout bounds one Eval; 0 means 1s.
	Timeout time.Duration
	// CallStackSize bounds nested Lua calls; 0 means 200.
	CallStackSize int
	// RegistryMaxSize bounds the Lua value stack; 0 means 65536 values (at least 256 are always allowed).
	RegistryMaxSize int
}

// VM evaluates scripts; it is safe for concurrent use. Lua states are pooled with their libraries opened; each
// Eval runs in its own copy of the global environment and library tables (kept for the next call only while
// no script can tell it from a new one), and a state goes back to the pool only after a call that succeeded.
type VM struct {
	opts   Options
	limits limits
	cache  *protoCache
	// timedOut is the cause of a call that ran out of time, made once.
	timedOut error
	// states holds idle states. Not a sync.Pool: every garbage collection empties one, and making a state
	// costs milliseconds where a call costs tens of microseconds; the channel's capacity bounds what idles.
	states chan *sandbox
	// created counts the states made, for tests.
	created atomic.Int64
}

var configureLua sync.Once

// New returns a VM with o's settings.
func New(o Options) *VM {
	// gopher-lua fills the gap to a large integer key with nils in one step; a lower bound keeps t[2^25] = v
	// from allocating hundreds of MiB (larger keys go to the hash part, so only # semantics change beyond it).
	configureLua.Do(func() { lua.MaxArrayIndex = maxArrayIndex })
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.CallStackSize <= 0 {
		o.CallStackSize = defaultCallStackSize
	}
	if o.RegistryMaxSize <= 0 {
		o.RegistryMaxSize = defaultRegistryMaxSize
	}
	return &VM{opts: o, limits: defaultLimits, cache: newProtoCache(defaultCacheSize),
		timedOut: fmt.Errorf("%w after %s", ErrTimeout, o.Timeout), states: make(chan *sandbox, idleStates())}
}

// idleStates is how many states a VM keeps for reuse: enough for every processor to evaluate at once.
func idleStates() int {
	return 2 * runtime.GOMAXPROCS(0)
}

// Eval runs script with the global obj set to input (converted as through JSON) and decodes the script's return
// value into out the way json.Unmarshal would. Tables made from JSON arrays and objects go back out as such,
// even when empty. Another empty table fits both maps and slices: returned directly it becomes the empty value
// of out's kind, nested it becomes null. Returning nil is an error, so a script that forgets to return cannot
// wipe what the caller writes back.
func (v *VM) Eval(ctx context.Context, script string, input any, out any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: panic: %v", ErrScript, r)
		}
	}()
	proto, err := v.cache.compile(script)
	if err != nil {
		return err
	}
	sb := v.acquire()
	// A state goes back to the pool only after a call that succeeded in time: after an error, a panic, a
	// tripped limit or the end of ctx it may be inconsistent, so it is closed.
	reuse := false
	defer func() { v.putBack(sb, reuse) }()
	reuse, err = v.evalIn(ctx, sb, proto, input, out)
	return err
}

// evalIn runs proto in sb with obj made from input as from its JSON and decodes the result into out; reuse
// tells whether sb may serve another call.
func (v *VM) evalIn(ctx context.Context, sb *sandbox, proto *lua.FunctionProto, input any, out any) (
	reuse bool, err error) {
	env := sb.prepare(v.limits)
	in, err := sb.inputToLua(input)
	if err != nil {
		return false, fmt.Errorf("converting the input to JSON: %w", err)
	}
	ret, clean, err := v.run(ctx, sb, proto, env, in)
	if err != nil {
		return false, err
	}
	err = sb.decode(ret, out)
	return clean && err == nil, err
}

// inputToLua converts input directly when it can, else through its JSON, reusing the previous input's tables
// where they fit.
func (sb *sandbox) inputToLua(input any) (lua.LValue, error) {
	sb.rec.begin()
	defer sb.rec.end()
	if in, ok := sb.goToLua(input); ok {
		return in, nil
	}
	data, err := json.Marshal(input)
	if err != nil {
		return lua.LNil, err
	}
	// The abandoned attempt's tables are garbage; the JSON path may take the previous input's again.
	sb.rec.begin()
	return sb.jsonToLua(data)
}

// run executes proto in sb with the environment env and obj set to in and returns the script's first
// result; clean tells whether the call ended without an error before its context did.
func (v *VM) run(ctx context.Context, sb *sandbox, proto *lua.FunctionProto, env *lua.LTable, in lua.LValue) (
	ret lua.LValue, clean bool, err error) {
	ctx, cancel := context.WithTimeoutCause(ctx, v.opts.Timeout, v.timedOut)
	defer cancel()
	if ctx.Err() != nil {
		return nil, false, interrupted(ctx)
	}
	sb.L.SetContext(ctx)
	ret, err = sb.call(proto, env, in)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, interrupted(ctx)
		}
		return nil, false, scriptError(err)
	}
	return ret, ctx.Err() == nil, nil
}

func (v *VM) acquire() *sandbox {
	select {
	case sb := <-v.states:
		return sb
	default:
	}
	v.created.Add(1)
	return newSandbox(v.opts)
}

func (v *VM) putBack(sb *sandbox, reuse bool) {
	if !reuse {
		sb.L.Close()
		return
	}
	sb.release()
	select {
	case v.states <- sb:
	default:
		sb.L.Close()
	}
}

// interrupted names why ctx ended: our timeout, the caller's deadline, or the caller's cancellation.
func interrupted(ctx context.Context) error {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, ErrTimeout):
		return cause
	case errors.Is(cause, context.DeadlineExceeded):
		return fmt.Errorf("%w: %w", ErrTimeout, cause)
	default:
		return fmt.Errorf("lua script interrupted: %w", cause)
	}
}

// scriptError keeps the first line of a Lua error (message with chunk name and line), not the traceback.
func scriptError(err error) error {
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) && apiErr.Object != nil {
		return fmt.Errorf("%w: %s", ErrScript, apiErr.Object.String())
	}
	return fmt.Errorf("%w: %w", ErrScript, err)
}
