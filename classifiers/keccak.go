package classifiers

import "math/bits"

// keccak256 is the original Keccak-256 (as used by Ethereum, with 0x01
// padding, not SHA3-256's 0x06). The standard library only has SHA3.
func keccak256(data []byte) [32]byte {
	const rate = 136
	var st [25]uint64
	for len(data) >= rate {
		absorb(&st, data[:rate])
		keccakF(&st)
		data = data[rate:]
	}
	var block [rate]byte
	copy(block[:], data)
	block[len(data)] ^= 0x01
	block[rate-1] ^= 0x80
	absorb(&st, block[:])
	keccakF(&st)
	var out [32]byte
	for i := 0; i < 4; i++ {
		v := st[i]
		for j := 0; j < 8; j++ {
			out[i*8+j] = byte(v >> (8 * j))
		}
	}
	return out
}

func absorb(st *[25]uint64, b []byte) {
	for i := 0; i < len(b)/8; i++ {
		var v uint64
		for j := 0; j < 8; j++ {
			v |= uint64(b[i*8+j]) << (8 * j)
		}
		st[i] ^= v
	}
}

var keccakRC = [24]uint64{
	0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000,
	0x000000000000808B, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
	0x000000000000008A, 0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
	0x000000008000808B, 0x800000000000008B, 0x8000000000008089, 0x8000000000008003,
	0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
	0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
}

var keccakRot = [25]int{0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14}

func keccakF(a *[25]uint64) {
	for round := 0; round < 24; round++ {
		var c [5]uint64
		for x := 0; x < 5; x++ {
			c[x] = a[x] ^ a[x+5] ^ a[x+10] ^ a[x+15] ^ a[x+20]
		}
		for x := 0; x < 5; x++ {
			d := c[(x+4)%5] ^ bits.RotateLeft64(c[(x+1)%5], 1)
			for y := 0; y < 25; y += 5 {
				a[x+y] ^= d
			}
		}
		var b [25]uint64
		for x := 0; x < 5; x++ {
			for y := 0; y < 5; y++ {
				b[y+5*((2*x+3*y)%5)] = bits.RotateLeft64(a[x+5*y], keccakRot[x+5*y])
			}
		}
		for x := 0; x < 5; x++ {
			for y := 0; y < 25; y += 5 {
				a[x+y] = b[x+y] ^ (^b[(x+1)%5+y] & b[(x+2)%5+y])
			}
		}
		a[0] ^= keccakRC[round]
	}
}
