package autodiff

import "math"

// interruptEvery is how many nodes the backward sweep runs between polls
// of the tape's interruption channel (SetInterrupt).
const interruptEvery = 1 << 16

// backward runs every recorded node in reverse order. It reports false
// when the tape's interruption channel closed before the sweep ended.
func (t *Tape) backward() bool {
	val, adj, nodes := t.val, t.adj, t.nodes
	for k := len(nodes) - 1; k >= 0; k-- {
		if k&(interruptEvery-1) == 0 && t.done != nil {
			select {
			case <-t.done:
				return false
			default:
			}
		}
		nd := &nodes[k]
		if nd.n == 1 && nd.op == opBinary && nd.fn <= uint8(Div) {
			// Scalar arithmetic, inline. Adding into a constant's
			// adjoint is harmless, so the flags are not tested.
			gi := adj[nd.out]
			switch BinaryFunc(nd.fn) {
			case Add:
				adj[nd.a] += gi
				adj[nd.b] += gi
			case Sub:
				adj[nd.a] += gi
				adj[nd.b] -= gi
			case Mul:
				adj[nd.a] += gi * val[nd.b]
				adj[nd.b] += gi * val[nd.a]
			default:
				y := val[nd.b]
				adj[nd.a] += gi / y
				adj[nd.b] -= gi * val[nd.out] / y
			}
			continue
		}
		if nd.n == 1 && (nd.op == opBinary || nd.op == opUnary) {
			backScalar(nd, val, adj)
			continue
		}
		n := int(nd.n)
		g := adj[nd.out : int(nd.out)+n]
		switch nd.op {
		case opUnary:
			df := unaryTable[nd.fn].df
			x := val[nd.a : int(nd.a)+n]
			y := val[nd.out : int(nd.out)+n]
			ax := adj[nd.a : int(nd.a)+n]
			for i, gi := range g {
				if gi != 0 {
					ax[i] += gi * df(x[i], y[i])
				}
			}
		case opBinary:
			t.backBinary(nd, g)
		case opSum:
			ax := adj[nd.a : nd.a+nd.c]
			gi := g[0]
			for i := range ax {
				ax[i] += gi
			}
		case opDotSelf:
			ax := adj[nd.a : nd.a+nd.c]
			x := val[nd.a : nd.a+nd.c]
			gi := 2 * g[0]
			for i, xi := range x {
				ax[i] += gi * xi
			}
		case opLogSumExp:
			ax := adj[nd.a : nd.a+nd.c]
			x := val[nd.a : nd.a+nd.c]
			y, gi := val[nd.out], g[0]
			if math.IsInf(y, 0) {
				break // all terms -Inf (or one +Inf): no finite gradient to give
			}
			for i, xi := range x {
				ax[i] += gi * math.Exp(xi-y)
			}
		case opDot:
			gi := g[0]
			m := int(nd.c)
			if nd.flags&nodeAConst == 0 {
				ax, bv := adj[nd.a:int(nd.a)+m], val[nd.b:int(nd.b)+m]
				for i, b := range bv {
					ax[i] += gi * b
				}
			}
			if nd.flags&nodeBConst == 0 {
				bx, av := adj[nd.b:int(nd.b)+m], val[nd.a:int(nd.a)+m]
				for i, a := range av {
					bx[i] += gi * a
				}
			}
		case opSoftmax:
			// dx_j = y_j (g_j - Σ_i g_i y_i)
			y := val[nd.out : int(nd.out)+n]
			ax := adj[nd.a : int(nd.a)+n]
			var s float64
			for i, yi := range y {
				s += g[i] * yi
			}
			for i, yi := range y {
				ax[i] += yi * (g[i] - s)
			}
		case opLogSoftmax:
			// dx_j = g_j - softmax_j Σ_i g_i
			y := val[nd.out : int(nd.out)+n]
			ax := adj[nd.a : int(nd.a)+n]
			var s float64
			for _, gi := range g {
				s += gi
			}
			for i, yi := range y {
				ax[i] += g[i] - math.Exp(yi)*s
			}
		case opCumSum:
			ax := adj[nd.a : int(nd.a)+n]
			var s float64
			for i := n - 1; i >= 0; i-- {
				s += g[i]
				ax[i] += s
			}
		case opFill:
			var s float64
			for _, gi := range g {
				s += gi
			}
			adj[nd.a] += s
		case opMatMul:
			t.backMatMul(nd, g)
		case opTranspose:
			c := int(nd.c)
			r := n / max(c, 1)
			ax := adj[nd.a : int(nd.a)+n]
			for i := 0; i < r; i++ {
				for j := 0; j < c; j++ {
					ax[i*c+j] += g[j*r+i]
				}
			}
		case opGather:
			idx := t.ints[nd.c : int(nd.c)+n]
			ax := adj[nd.a:]
			for k, i := range idx {
				ax[i] += g[k]
			}
		case opConcat:
			k := 0
			for _, p := range t.args[nd.a:nd.b] {
				if p.rows == 1 && p.cols == 1 { // the common case: a scalar
					if !p.IsConst() {
						adj[p.off] += g[k]
					}
					k++
					continue
				}
				l := p.Len()
				if !p.IsConst() {
					ap := adj[p.off : int(p.off)+l]
					for i := range ap {
						ap[i] += g[k+i]
					}
				}
				k += l
			}
		case opPartials:
			gi := g[0]
			off := int(nd.c)
			for _, in := range t.args[nd.a:nd.b] {
				if in.IsConst() {
					continue
				}
				l := in.Len()
				d := t.part[off : off+l]
				ax := adj[in.off : int(in.off)+l]
				for i, di := range d {
					ax[i] += gi * di
				}
				off += l
			}
		case opPartialsElem:
			off := int(nd.c)
			for _, in := range t.args[nd.a:nd.b] {
				if in.IsConst() {
					continue
				}
				d := t.part[off : off+n]
				if in.Len() == n {
					ax := adj[in.off : int(in.off)+n]
					for i, di := range d {
						ax[i] += g[i] * di
					}
				} else {
					var s float64
					for i, di := range d {
						s += g[i] * di
					}
					adj[in.off] += s
				}
				off += n
			}
		case opCustom:
			t.custom[nd.c].Backward(t, t.args[nd.a], t.args[nd.a+1:nd.b])
		}
	}
	return true
}

func (t *Tape) backBinary(nd *node, g []float64) {
	val, adj := t.val, t.adj
	n := len(g)
	sa, sb := 1, 1
	if nd.flags&nodeAScalar != 0 {
		sa = 0
	}
	if nd.flags&nodeBScalar != 0 {
		sb = 0
	}
	a, b := int(nd.a), int(nd.b)
	av, bv := val[a:a+(n-1)*sa+1], val[b:b+(n-1)*sb+1]
	aa, ab := adj[a:a+(n-1)*sa+1], adj[b:b+(n-1)*sb+1]
	doA, doB := nd.flags&nodeAConst == 0, nd.flags&nodeBConst == 0
	switch BinaryFunc(nd.fn) {
	case Add, Sub:
		if doA {
			accumulate(aa, g, sa, 1)
		}
		if doB {
			if nd.fn == uint8(Add) {
				accumulate(ab, g, sb, 1)
			} else {
				accumulate(ab, g, sb, -1)
			}
		}
	case Mul:
		if doA {
			mulAccumulate(aa, sa, g, bv, sb)
		}
		if doB {
			mulAccumulate(ab, sb, g, av, sa)
		}
	case Div:
		y := val[nd.out : int(nd.out)+n]
		if doA {
			if sa == 1 && sb == 1 {
				aa, bv := aa[:n], bv[:n]
				for i, gi := range g {
					aa[i] += gi / bv[i]
				}
			} else {
				var s float64
				for i, gi := range g {
					d := gi / bv[i*sb]
					if sa == 0 {
						s += d
					} else {
						aa[i] += d
					}
				}
				aa[0] += s
			}
		}
		if doB {
			if sb == 1 {
				ab, bv, y := ab[:n], bv[:n], y[:n]
				for i, gi := range g {
					ab[i] -= gi * y[i] / bv[i]
				}
			} else {
				var s float64
				for i, gi := range g {
					s += gi * y[i]
				}
				ab[0] -= s / bv[0]
			}
		}
	default:
		d := binaryTable[nd.fn].d
		y := val[nd.out : int(nd.out)+n]
		for i, gi := range g {
			da, db := d(av[i*sa], bv[i*sb], y[i])
			if doA {
				aa[i*sa] += gi * da
			}
			if doB {
				ab[i*sb] += gi * db
			}
		}
	}
}

// mulAccumulate adds g[i]·other[i*so] into dst[i*sd], summing into dst[0]
// when sd is 0.
func mulAccumulate(dst []float64, sd int, g, other []float64, so int) {
	n := len(g)
	switch {
	case sd == 1 && so == 1:
		dst, other = dst[:n], other[:n]
		for i, gi := range g {
			dst[i] += gi * other[i]
		}
	case sd == 1: // so == 0
		dst, z := dst[:n], other[0]
		for i, gi := range g {
			dst[i] += gi * z
		}
	case so == 1: // sd == 0
		other = other[:n]
		var s float64
		for i, gi := range g {
			s += gi * other[i]
		}
		dst[0] += s
	default:
		var s float64
		for _, gi := range g {
			s += gi
		}
		dst[0] += s * other[0]
	}
}

// accumulate adds s·g into dst, elementwise (stride 1) or summed into
// dst[0] (stride 0).
func accumulate(dst, g []float64, stride int, s float64) {
	if stride == 0 {
		var sum float64
		for _, gi := range g {
			sum += gi
		}
		dst[0] += s * sum
		return
	}
	dst = dst[:len(g)]
	if s == 1 {
		for i, gi := range g {
			dst[i] += gi
		}
		return
	}
	for i, gi := range g {
		dst[i] -= gi
	}
}

// backMatMul adds G Bᵀ into adj(A) and Aᵀ G into adj(B), for Y = A B with
// A r×k, B k×c, G = adj(Y) r×c.
func (t *Tape) backMatMul(nd *node, g []float64) {
	k, c := int(t.ints[nd.c]), int(t.ints[nd.c+1])
	r := len(g) / max(c, 1)
	if c == 0 {
		return
	}
	val, adj := t.val, t.adj
	A, B := val[nd.a:int(nd.a)+r*k], val[nd.b:int(nd.b)+k*c]
	if c == 1 {
		// Matrix × vector: both adjoints are sums of scaled rows.
		if nd.flags&nodeAConst == 0 {
			dA := adj[nd.a : int(nd.a)+r*k]
			for i, gi := range g {
				di := dA[i*k : i*k+k]
				for j, b := range B {
					di[j] += gi * b
				}
			}
		}
		if nd.flags&nodeBConst == 0 {
			dB := adj[nd.b : int(nd.b)+k]
			for i, gi := range g {
				if gi == 0 {
					continue
				}
				for j, a := range A[i*k : i*k+k] {
					dB[j] += gi * a
				}
			}
		}
		return
	}
	if nd.flags&nodeAConst == 0 {
		dA := adj[nd.a : int(nd.a)+r*k]
		for i := 0; i < r; i++ {
			gi := g[i*c : i*c+c]
			di := dA[i*k : i*k+k]
			for j := range di {
				bj := B[j*c : j*c+c]
				var s float64
				for l, gl := range gi {
					s += gl * bj[l]
				}
				di[j] += s
			}
		}
	}
	if nd.flags&nodeBConst == 0 {
		dB := adj[nd.b : int(nd.b)+k*c]
		for i := 0; i < r; i++ {
			gi := g[i*c : i*c+c]
			for j, a := range A[i*k : i*k+k] {
				if a == 0 {
					continue
				}
				dj := dB[j*c : j*c+c]
				for l, gl := range gi {
					dj[l] += a * gl
				}
			}
		}
	}
}

// backScalar is the backward step of a scalar unary node, or of a scalar
// binary node other than the four arithmetic operations (which backward
// does inline): the elementwise loops' arithmetic for one element,
// bitwise, without their slices.
func backScalar(nd *node, val, adj []float64) {
	gi := adj[nd.out]
	if nd.op == opUnary {
		if gi == 0 {
			return
		}
		x, y := val[nd.a], val[nd.out]
		switch UnaryFunc(nd.fn) {
		case Neg:
			adj[nd.a] += gi * -1
		case Square:
			adj[nd.a] += gi * (2 * x)
		case Sqrt:
			adj[nd.a] += gi * (0.5 / y)
		case Exp:
			adj[nd.a] += gi * y
		default:
			adj[nd.a] += gi * unaryTable[nd.fn].df(x, y)
		}
		return
	}
	da, db := binaryTable[nd.fn].d(val[nd.a], val[nd.b], val[nd.out])
	if nd.flags&nodeAConst == 0 {
		adj[nd.a] += gi * da
	}
	if nd.flags&nodeBConst == 0 {
		adj[nd.b] += gi * db
	}
}
