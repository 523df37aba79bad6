package kernels

// Embed is the embedding layer's forward pass: out[i] = table[ids[i]], rows of width values (table (V, width),
// out (len(ids), width)). It panics on an id outside the table.
func Embed[T Float](table []T, ids []int, width int, out []T) {
	for i, id := range ids {
		copy(out[i*width:(i+1)*width], table[id*width:(id+1)*width])
	}
}

// EmbedBackward is Embed's backward pass: it adds each row dOut[i] into dTable[ids[i]], in the order of ids.
func EmbedBackward[T Float](dTable []T, ids []int, width int, dOut []T) {
	for i, id := range ids {
		row := dTable[id*width : (id+1)*width]
		for j, g := range dOut[i*width : (i+1)*width] {
			row[j] += g
		}
	}
}
