// Package luavm runs traffic-routing Lua scripts in a sandbox: only the base (minus loading and environment
// functions), table, string and math libraries plus a json module, a per-call timeout, bounded call and value
// stacks, and size caps on the builtins that can allocate large strings in one step.
package luavm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
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

// VM evaluates scripts; it is safe for concurrent use. Every Eval runs in a fresh Lua state.
type VM struct {
	opts   Options
	limits limits
	cache  *protoCache
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
	return &VM{opts: o, limits: defaultLimits, cache: newProtoCache(defaultCacheSize)}
}

// Eval runs script with the global obj set to input (converted through JSON) and decodes the script's return
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
	in, err := jsonValue(input)
	if err != nil {
		return fmt.Errorf("converting the input to JSON: %w", err)
	}
	result, err := v.run(ctx, proto, in)
	if err != nil {
		return err
	}
	return decodeResult(result, out)
}

// run executes proto in a fresh state and returns its result as a JSON-shaped Go value.
func (v *VM) run(ctx context.Context, proto *lua.FunctionProto, in any) (any, error) {
	timedOut := fmt.Errorf("%w after %s", ErrTimeout, v.opts.Timeout)
	ctx, cancel := context.WithTimeoutCause(ctx, v.opts.Timeout, timedOut)
	defer cancel()
	if ctx.Err() != nil {
		return nil, interrupted(ctx)
	}
	sb := newSandbox(ctx, v.opts, v.limits)
	defer sb.L.Close()
	ret, err := sb.call(proto, in)
	if err != nil {
		if ctx.Err() != nil {
			return nil, interrupted(ctx)
		}
		return nil, scriptError(err)
	}
	return sb.result(ret)
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

// jsonValue turns any JSON-marshalable value into the generic form json.Unmarshal produces.
func jsonValue(input any) (any, error) {
	data, err := json.Marshal(input)
	if err != nil {
		return nil, err
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		return nil, err
	}
	return generic, nil
}

// decodeResult fills out from the script's result; nil stands for an empty table without a JSON origin.
func decodeResult(result any, out any) error {
	data := emptyJSONFor(out)
	if result != nil {
		var err error
		if data, err = json.Marshal(result); err != nil {
			return fmt.Errorf("%w: encoding the return value: %w", ErrScript, err)
		}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: decoding the return value: %w", ErrScript, err)
	}
	return nil
}

// emptyJSONFor is the JSON of an empty value of the kind out points to.
func emptyJSONFor(out any) []byte {
	t := reflect.TypeOf(out)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == nil:
		return []byte("null")
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return []byte("[]")
	case t.Kind() == reflect.Map || t.Kind() == reflect.Struct || t.Kind() == reflect.Interface:
		return []byte("{}")
	default:
		return []byte("null")
	}
}
