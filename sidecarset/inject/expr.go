package inject

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/api/resource"
)

// value is a number (percentages read as fractions) or a resource quantity, the two kinds of values of a
// resourcesExpr expression.
type value struct {
	quantity *resource.Quantity
	number   float64
}

// asQuantity reads a number as that many units (3 is 3 cores, or 3 bytes), to milli precision.
func (v value) asQuantity() resource.Quantity {
	if v.quantity != nil {
		return v.quantity.DeepCopy()
	}
	return *resource.NewMilliQuantity(int64(v.number*1000), resource.DecimalSI)
}

// quantityUnits are the suffixes that make a literal a quantity; upstream accepts no other.
var quantityUnits = map[string]bool{"m": true, "k": true, "M": true, "G": true, "T": true, "P": true,
	"Ki": true, "Mi": true, "Gi": true, "Ti": true, "Pi": true}

// evaluator evaluates a resourcesExpr expression such as "max(cpu*50%, 50m)": + - * / and parentheses,
// unary minus, max(a, b) and min(a, b), numbers (3, 1.5, 2e3, 50%), quantities (50m, 128Mi) and the one
// variable the caller binds. Quantities add to quantities and numbers (a number counting as units), scale
// by numbers only, and never multiply or divide each other, as upstream's calculator.
type evaluator struct {
	src  string
	pos  int
	vars map[string]value
}

func evaluate(expr string, vars map[string]value) (value, error) {
	e := &evaluator{src: expr, vars: vars}
	v, err := e.expr()
	if err != nil {
		return value{}, err
	}
	e.space()
	if e.pos < len(e.src) {
		return value{}, fmt.Errorf("unexpected %q at offset %d", e.src[e.pos:], e.pos)
	}
	if v.quantity != nil && v.quantity.Sign() < 0 || v.quantity == nil && v.number < 0 {
		return value{}, fmt.Errorf("the result is negative")
	}
	return v, nil
}

func (e *evaluator) space() {
	for e.pos < len(e.src) && unicode.IsSpace(rune(e.src[e.pos])) {
		e.pos++
	}
}

// eat consumes c if it comes next.
func (e *evaluator) eat(c byte) bool {
	e.space()
	if e.pos < len(e.src) && e.src[e.pos] == c {
		e.pos++
		return true
	}
	return false
}

func (e *evaluator) expr() (value, error) {
	left, err := e.term()
	for err == nil {
		switch {
		case e.eat('+'):
			var right value
			if right, err = e.term(); err == nil {
				left = add(left, right, false)
			}
		case e.eat('-'):
			var right value
			if right, err = e.term(); err == nil {
				left = add(left, right, true)
			}
		default:
			return left, nil
		}
	}
	return value{}, err
}

func (e *evaluator) term() (value, error) {
	left, err := e.factor()
	for err == nil {
		switch {
		case e.eat('*'):
			var right value
			if right, err = e.factor(); err == nil {
				left, err = scale(left, right, false)
			}
		case e.eat('/'):
			var right value
			if right, err = e.factor(); err == nil {
				left, err = scale(left, right, true)
			}
		default:
			return left, nil
		}
	}
	return value{}, err
}

func (e *evaluator) factor() (value, error) {
	e.space()
	if e.pos >= len(e.src) {
		return value{}, fmt.Errorf("unexpected end of expression")
	}
	c := e.src[e.pos]
	switch {
	case c == '-':
		e.pos++
		v, err := e.factor()
		if err != nil {
			return value{}, err
		}
		return add(value{}, v, true), nil
	case c == '(':
		e.pos++
		v, err := e.expr()
		if err != nil {
			return value{}, err
		}
		if !e.eat(')') {
			return value{}, fmt.Errorf("missing ) at offset %d", e.pos)
		}
		return v, nil
	case c == '.' || c >= '0' && c <= '9':
		return e.literal()
	case unicode.IsLetter(rune(c)):
		return e.identifier()
	}
	return value{}, fmt.Errorf("unexpected %q at offset %d", c, e.pos)
}

// literal reads a number, a percentage or a quantity.
func (e *evaluator) literal() (value, error) {
	start := e.pos
	for e.pos < len(e.src) && (e.src[e.pos] >= '0' && e.src[e.pos] <= '9' || e.src[e.pos] == '.') {
		e.pos++
	}
	e.exponent()
	number := e.src[start:e.pos]
	if e.pos < len(e.src) && e.src[e.pos] == '%' {
		e.pos++
		n, err := strconv.ParseFloat(number, 64)
		if err != nil {
			return value{}, fmt.Errorf("invalid percentage %q", e.src[start:e.pos])
		}
		return value{number: n / 100}, nil
	}
	for e.pos < len(e.src) && unicode.IsLetter(rune(e.src[e.pos])) {
		e.pos++
	}
	if unit := e.src[start+len(number) : e.pos]; unit != "" {
		return quantityLiteral(e.src[start:e.pos], unit)
	}
	n, err := strconv.ParseFloat(number, 64)
	if err != nil {
		return value{}, fmt.Errorf("invalid number %q", number)
	}
	return value{number: n}, nil
}

// exponent consumes the exponent of a number (e3, E-2) if one comes next.
func (e *evaluator) exponent() {
	if e.pos >= len(e.src) || e.src[e.pos] != 'e' && e.src[e.pos] != 'E' || !e.exponentFollows() {
		return
	}
	e.pos++
	if e.src[e.pos] == '+' || e.src[e.pos] == '-' {
		e.pos++
	}
	for e.pos < len(e.src) && e.src[e.pos] >= '0' && e.src[e.pos] <= '9' {
		e.pos++
	}
}

func quantityLiteral(text, unit string) (value, error) {
	if !quantityUnits[unit] {
		return value{}, fmt.Errorf("invalid quantity %q", text)
	}
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return value{}, fmt.Errorf("invalid quantity %q: %w", text, err)
	}
	return value{quantity: &q}, nil
}

// exponentFollows tells whether the e at pos starts an exponent (a digit follows, maybe after a sign).
func (e *evaluator) exponentFollows() bool {
	i := e.pos + 1
	if i < len(e.src) && (e.src[i] == '+' || e.src[i] == '-') {
		i++
	}
	return i < len(e.src) && e.src[i] >= '0' && e.src[i] <= '9'
}

// identifier reads a variable or a call of max or min.
func (e *evaluator) identifier() (value, error) {
	start := e.pos
	for e.pos < len(e.src) && (unicode.IsLetter(rune(e.src[e.pos])) || unicode.IsDigit(rune(e.src[e.pos])) || e.src[e.pos] == '_') {
		e.pos++
	}
	name := strings.ToLower(e.src[start:e.pos])
	if !e.eat('(') {
		v, ok := e.vars[name]
		if !ok {
			return value{}, fmt.Errorf("undefined variable %q", name)
		}
		return v, nil
	}
	var args []value
	for {
		v, err := e.expr()
		if err != nil {
			return value{}, err
		}
		args = append(args, v)
		if e.eat(')') {
			break
		}
		if !e.eat(',') {
			return value{}, fmt.Errorf("missing ) at offset %d", e.pos)
		}
	}
	if name != "max" && name != "min" {
		return value{}, fmt.Errorf("unknown function %q", name)
	}
	if len(args) != 2 {
		return value{}, fmt.Errorf("%s takes 2 arguments, not %d", name, len(args))
	}
	return pick(args[0], args[1], name == "max"), nil
}

// add adds (or subtracts) two values: quantities when either is one.
func add(a, b value, subtract bool) value {
	if a.quantity == nil && b.quantity == nil {
		if subtract {
			return value{number: a.number - b.number}
		}
		return value{number: a.number + b.number}
	}
	sum, other := a.asQuantity(), b.asQuantity()
	if subtract {
		other.Neg()
	}
	sum.Add(other)
	return value{quantity: &sum}
}

// scale multiplies (or divides) two values, of which at most one, the dividend, is a quantity.
func scale(a, b value, divide bool) (value, error) {
	if b.quantity != nil && (divide || a.quantity != nil) {
		return value{}, fmt.Errorf("a quantity can only be scaled by a number")
	}
	if divide && b.number == 0 {
		return value{}, fmt.Errorf("division by zero")
	}
	if a.quantity == nil && b.quantity == nil {
		if divide {
			return value{number: a.number / b.number}, nil
		}
		return value{number: a.number * b.number}, nil
	}
	q, factor := a.quantity, b.number
	if q == nil {
		q, factor = b.quantity, a.number
	}
	milli := float64(q.MilliValue()) * factor
	if divide {
		milli = float64(q.MilliValue()) / factor
	}
	out := q.DeepCopy()
	out.SetMilli(int64(milli))
	return value{quantity: &out}, nil
}

// pick is max (or min) of two values, a quantity when either is one; ties go to the first.
func pick(a, b value, larger bool) value {
	if a.quantity == nil && b.quantity == nil {
		if (a.number >= b.number) == larger || a.number == b.number {
			return a
		}
		return b
	}
	qa, qb := a.asQuantity(), b.asQuantity()
	c := qa.Cmp(qb)
	if c == 0 || (c > 0) == larger {
		return value{quantity: &qa}
	}
	return value{quantity: &qb}
}
