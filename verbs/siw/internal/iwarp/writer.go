package iwarp

import (
	"encoding/binary"
	"io"
	"net"
)

// WriterOptions configures a FrameWriter.
type WriterOptions struct {
	// CRC enables computing the MPA CRC; when off the field is sent as
	// zeros, as siw does.
	CRC bool
	// BufferSize is the batch buffer; 0 means DefaultWriteBufferSize.
	BufferSize int
	// CopyThreshold is the largest payload copied into the buffer; larger
	// payloads are written from the caller's memory. 0 means
	// DefaultCopyThreshold; negative means never copy.
	CopyThreshold int
	// MaxSegments bounds the iovec list of one write; 0 means
	// DefaultMaxSegments.
	MaxSegments int
}

// FrameWriter batches FPDUs for one MPA connection and writes them with as
// few syscalls as possible, without allocating per frame.
//
// Headers, pads, CRCs and small payloads are copied into one reusable
// buffer; a payload above the copy threshold is not copied but referenced,
// so a Flush becomes a single writev of
//
//	[buffered FPDUs + header][payload from user memory][pad+CRC + more FPDUs]...
//
// through net.Buffers (which uses writev on a *net.TCPConn and one Write
// per segment on other writers). Referenced payload memory must stay
// unchanged until the Flush that sends it returns: the CRC is computed
// when the frame is queued. Frame flushes by itself when the buffer or the
// iovec list is full, so memory of any frame queued before a Frame call
// may already be on the wire when it returns, and is certainly there
// after Flush.
//
// Errors from the underlying writer are sticky. A FrameWriter is not safe
// for concurrent use.
type FrameWriter struct {
	w       io.Writer
	buf     []byte // fixed capacity: iov entries alias it
	n       int    // bytes used in buf
	mark    int    // start of the buf bytes not yet listed in iov
	iov     [][]byte
	bufs    net.Buffers // WriteTo consumes its receiver; kept here so that does not allocate
	pending int         // bytes queued, buffered or referenced
	crcOn   bool
	copyMax int
	maxSeg  int
	err     error
}

// NewFrameWriter returns a FrameWriter writing to w.
func NewFrameWriter(w io.Writer, opt WriterOptions) *FrameWriter {
	size := opt.BufferSize
	if size <= 0 {
		size = DefaultWriteBufferSize
	}
	size = max(size, minWriteBufferSize)
	copyMax := opt.CopyThreshold
	if copyMax == 0 {
		copyMax = DefaultCopyThreshold
	}
	maxSeg := opt.MaxSegments
	if maxSeg <= 0 {
		maxSeg = DefaultMaxSegments
	}
	maxSeg = max(maxSeg, 4)
	return &FrameWriter{
		w:       w,
		buf:     make([]byte, size),
		iov:     make([][]byte, 0, maxSeg),
		crcOn:   opt.CRC,
		copyMax: copyMax,
		maxSeg:  maxSeg,
	}
}

// SetCRC switches CRC generation for the frames queued after the call.
func (fw *FrameWriter) SetCRC(on bool) { fw.crcOn = on }

// Buffered returns the number of bytes queued and not yet written.
func (fw *FrameWriter) Buffered() int { return fw.pending }

// Frame queues one FPDU. hdr is a complete DDP/RDMAP header of exactly its
// opcode's HeaderLen, starting at the ULPDU_Length field, which Frame sets
// from len(hdr) and len(payload); hdr is copied and may be reused at once.
// payload is copied or referenced (see FrameWriter). The caller segments
// messages so that the ULPDU fits (MaxPayload); ErrFrameTooLong and
// ErrHeaderLen report a caller bug and queue nothing.
func (fw *FrameWriter) Frame(hdr Header, payload []byte) error {
	return fw.FrameParts(hdr, nil, payload)
}

// FrameParts queues one FPDU whose payload is prefix followed by payload:
// prefix is copied behind the header like a small payload, payload is
// copied or referenced as Frame's. A message whose small first piece and
// large second piece lie in separate buffers (a Send of an application
// header and its data) so travels as one FPDU without its large piece
// being copied.
func (fw *FrameWriter) FrameParts(hdr Header, prefix, payload []byte) error {
	if fw.err != nil {
		return fw.err
	}
	if len(hdr) < CheckHeaderLen || len(hdr) != hdr.Opcode().HeaderLen() {
		return ErrHeaderLen
	}
	ulpdu := len(hdr) - ULPDULengthLen + len(prefix) + len(payload)
	if ulpdu > MaxULPDULength {
		return ErrFrameTooLong
	}
	pad := PadLen(ulpdu)
	fixed := len(hdr) + len(prefix) + pad + CRCLen
	copyPayload := len(payload) <= fw.copyMax || len(payload) == 0
	need := fixed
	if copyPayload {
		need += len(payload)
	}
	if len(fw.buf)-fw.n < need || (!copyPayload && len(fw.iov)+3 > fw.maxSeg) {
		if err := fw.Flush(); err != nil {
			return err
		}
		if len(fw.buf) < need {
			copyPayload, need = false, fixed
		}
		if len(fw.buf) < need {
			return ErrFrameTooLong // a prefix larger than the buffer: a caller bug
		}
	}

	start := fw.n
	h := Header(fw.buf[fw.n : fw.n+len(hdr)])
	if len(hdr) == UntaggedHeaderLen {
		copyUntagged(h, hdr)
	} else {
		copy(h, hdr)
	}
	h.SetULPDULength(ulpdu)
	fw.n += len(hdr)
	if len(prefix) > 0 { // mostly none: no call to copy nothing
		fw.n += copy(fw.buf[fw.n:], prefix)
	}
	var sum uint32
	if fw.crcOn {
		sum = UpdateCRC32c(0, fw.buf[start:fw.n])
		sum = UpdateCRC32c(sum, payload)
	}
	if copyPayload {
		fw.n += copy(fw.buf[fw.n:], payload)
	} else {
		fw.iov = append(fw.iov, fw.buf[fw.mark:fw.n], payload)
		fw.mark = fw.n
	}
	// The trailer in two fixed stores rather than a clear: pad < 4, so
	// one zeroes it, the other writes the CRC (zero without CRCs).
	t := fw.buf[fw.n : fw.n+pad+CRCLen]
	PutCRC(t, 0)
	if fw.crcOn {
		sum = UpdateCRC32c(sum, t[:pad])
	} else {
		sum = 0
	}
	PutCRC(t[pad:], sum)
	fw.n += len(t)
	fw.pending += FrameLen(ulpdu)
	return nil
}

// Flush writes every queued FPDU, in one writev where the writer supports
// it, and releases the references to payload memory.
func (fw *FrameWriter) Flush() error {
	if fw.err != nil {
		return fw.err
	}
	var err error
	if len(fw.iov) == 0 {
		// Everything was copied (mark is 0): the buffer is the write,
		// with no trip through the iovec list.
		if fw.n > 0 {
			_, err = fw.w.Write(fw.buf[:fw.n])
		}
		fw.n, fw.pending = 0, 0
		if err != nil {
			fw.err = err
		}
		return err
	}
	if fw.n > fw.mark {
		fw.iov = append(fw.iov, fw.buf[fw.mark:fw.n])
	}
	switch len(fw.iov) {
	case 1:
		// One store: clear would call the runtime's bulk clear of
		// pointers for a single slice.
		_, err = fw.w.Write(fw.iov[0])
		fw.iov[0] = nil
	default:
		fw.bufs = fw.iov
		_, err = fw.bufs.WriteTo(fw.w)
		fw.bufs = nil
		clear(fw.iov)
	}
	fw.iov = fw.iov[:0]
	fw.n, fw.mark, fw.pending = 0, 0, 0
	if err != nil {
		fw.err = err
	}
	return err
}

// copyUntagged copies an untagged header (every Send's) in three word
// moves: copy, whose length it does not know, calls memmove, and around
// that call FrameParts saves and reloads what it holds in registers.
func copyUntagged(dst, src Header) {
	_, _ = dst[UntaggedHeaderLen-1], src[UntaggedHeaderLen-1]
	binary.LittleEndian.PutUint64(dst, binary.LittleEndian.Uint64(src))
	binary.LittleEndian.PutUint64(dst[8:], binary.LittleEndian.Uint64(src[8:]))
	binary.LittleEndian.PutUint32(dst[16:], binary.LittleEndian.Uint32(src[16:]))
}
