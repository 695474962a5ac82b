package iwarp

import "io"

// ReaderOptions configures a FrameReader.
type ReaderOptions struct {
	// CRC enables checking the MPA CRC of every FPDU. When it is off the
	// CRC field is skipped unchecked, as siw does.
	CRC bool
	// BufferSize is the read buffer; 0 means DefaultReadBufferSize.
	// Values below the size of the largest MPA frame are raised to it.
	BufferSize int
}

// VectorReader is a reader that can read into two buffers with one call
// (readv). ReadPayload uses it, when its reader has it, to read a large
// payload straight into its destination and, in the same call, whatever
// follows into the FrameReader's own buffer: the pad, the CRC and the
// next FPDUs, which would otherwise each cost a read of their own.
type VectorReader interface {
	io.Reader
	// ReadVec reads into a and then b and returns the total: n > len(a)
	// means that a is full and b holds n-len(a) bytes.
	ReadVec(a, b []byte) (n int, err error)
}

// FrameReader decodes the FPDU stream of one MPA connection from an
// io.Reader, typically the *net.TCPConn, without allocating per frame.
//
// It reads into its own buffer with large reads so that many small FPDUs
// cost one syscall, and lets the caller place payload directly into its
// destination. The protocol for each FPDU is:
//
//	h, err := fr.Next()       // header, validated by CheckHeader
//	fr.ReadPayload(dst)       // zero or more times, up to h.PayloadLen() bytes
//	err = fr.Finish()         // skips unread payload, reads pad and CRC, checks the CRC
//
// Finish must return nil before the caller acts on a completed message:
// that is when the CRC is known to be good. Next finishes an unfinished
// frame itself. The Header returned by Next stays valid until the next
// call to Next.
//
// Errors are sticky: after any error every call returns the same error.
// A *ProtocolError names the Terminate to send; io.EOF from Next means
// the peer closed the stream cleanly at an FPDU boundary; io.ErrUnexpectedEOF
// means it closed inside one. A FrameReader is not safe for concurrent use.
type FrameReader struct {
	r     io.Reader
	rv    VectorReader // r, when it reads vectors; else nil
	buf   []byte
	rd    int // buffered bytes are buf[rd:wr]
	wr    int
	crcOn bool
	err   error

	// Current FPDU.
	hdr     [MaxHeaderLen]byte
	inFrame bool
	left    int    // payload bytes not yet consumed
	trailer int    // pad + CRC bytes
	sum     uint32 // running CRC, when crcOn
}

// NewFrameReader returns a FrameReader reading from r.
func NewFrameReader(r io.Reader, opt ReaderOptions) *FrameReader {
	size := opt.BufferSize
	if size <= 0 {
		size = DefaultReadBufferSize
	}
	size = max(size, minReadBufferSize)
	rv, _ := r.(VectorReader)
	return &FrameReader{r: r, rv: rv, buf: make([]byte, size), crcOn: opt.CRC}
}

// Grow enlarges the read buffer to size bytes (never shrinks it), keeping
// what is buffered. A connection that turns out to carry large payloads
// grows it so that one read takes several FPDUs; payload bytes that
// arrive in the buffer are copied out of it once, whether the buffer is
// small or large, so only the number of reads changes.
func (fr *FrameReader) Grow(size int) {
	if size <= len(fr.buf) {
		return
	}
	b := make([]byte, size)
	fr.wr = copy(b, fr.buf[fr.rd:fr.wr])
	fr.rd = 0
	fr.buf = b
}

// BufferSize returns the size of the read buffer.
func (fr *FrameReader) BufferSize() int { return len(fr.buf) }

// SetCRC switches CRC checking, for a reader created before the MPA
// exchange decided it. Call it between frames.
func (fr *FrameReader) SetCRC(on bool) { fr.crcOn = on }

// Buffered returns the number of bytes read from the underlying reader and
// not yet consumed.
func (fr *FrameReader) Buffered() int { return fr.wr - fr.rd }

// Space returns the free tail of the read buffer, for a caller that
// reads the stream itself (a receiver that waits for the socket in its
// own goroutine): what it reads there and counts with Filled is
// buffered as if read by the reader. Nothing is buffered when it is
// empty: the buffer is then whole.
func (fr *FrameReader) Space() []byte {
	if fr.rd == fr.wr {
		fr.rd, fr.wr = 0, 0
	}
	return fr.buf[fr.wr:]
}

// Filled buffers n bytes the caller read into Space.
func (fr *FrameReader) Filled(n int) { fr.wr += n }

// PayloadLeft returns the payload bytes of the current FPDU not yet
// consumed by ReadPayload.
func (fr *FrameReader) PayloadLeft() int { return fr.left }

func (fr *FrameReader) fail(err error) error {
	fr.err = err
	return err
}

// fill makes at least n bytes (n <= len(buf)) available in buf[rd:wr].
func (fr *FrameReader) fill(n int) error {
	if fr.wr-fr.rd >= n {
		return nil
	}
	// Move the few bytes left (fewer than n) to the front, so that the
	// read may fill the whole buffer: a large buffer with its tail
	// nearly used would otherwise be refilled by small reads.
	if fr.rd == fr.wr {
		fr.rd, fr.wr = 0, 0
	} else if fr.rd > 0 {
		fr.wr = copy(fr.buf, fr.buf[fr.rd:fr.wr])
		fr.rd = 0
	}
	for empty := 0; fr.wr-fr.rd < n; {
		m, err := fr.r.Read(fr.buf[fr.wr:])
		fr.wr += m
		if fr.wr-fr.rd >= n {
			return nil
		}
		if err != nil {
			return err
		}
		if m == 0 {
			if empty++; empty >= 100 {
				return io.ErrNoProgress
			}
		}
	}
	return nil
}

// fillFrame is fill inside a frame or MPA message, where running out of
// stream is never clean.
func (fr *FrameReader) fillFrame(n int) error {
	err := fr.fill(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// ReadMPA reads one MPA Request or Reply through the reader's buffer. Any
// FPDU bytes that arrived behind the frame stay buffered for Next, so the
// initiator can read the Reply and the responder's first FPDUs from the
// same TCP read. Errors are those of ParseMPA or of the underlying reader;
// they are sticky like all others. PrivateData is freshly allocated.
func (fr *FrameReader) ReadMPA() (MPAFrame, error) {
	if fr.err != nil {
		return MPAFrame{}, fr.err
	}
	if err := fr.fill(MPAHeaderLen); err != nil {
		if err == io.EOF && fr.Buffered() > 0 {
			err = io.ErrUnexpectedEOF
		}
		return MPAFrame{}, fr.fail(err)
	}
	pdLen, err := checkMPAHeader(fr.buf[fr.rd : fr.rd+MPAHeaderLen])
	if err != nil {
		return MPAFrame{}, fr.fail(err)
	}
	if err := fr.fillFrame(MPAHeaderLen + pdLen); err != nil {
		return MPAFrame{}, fr.fail(err)
	}
	f, n, err := ParseMPA(fr.buf[fr.rd:fr.wr])
	if err != nil {
		return MPAFrame{}, fr.fail(err)
	}
	if f.PrivateData != nil {
		f.PrivateData = append([]byte(nil), f.PrivateData...)
	}
	fr.rd += n
	return f, nil
}

// Next finishes the current FPDU if the caller has not, then reads and
// validates the next FPDU's header and returns it (ULPDU_Length through
// the opcode's fixed header). The payload length is h.PayloadLen().
//
// On a *ProtocolError the returned Header holds the part of the offending
// header that was read (at least the first 4 bytes, all of it where the
// Terminate needs it), ready for NewTerminate.
func (fr *FrameReader) Next() (Header, error) {
	if fr.err != nil {
		return nil, fr.err
	}
	if fr.inFrame {
		if err := fr.Finish(); err != nil {
			return nil, err
		}
	}
	if err := fr.fill(CheckHeaderLen); err != nil {
		if err == io.EOF && fr.Buffered() > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, fr.fail(err)
	}
	_, hl, err := CheckHeader(fr.buf[fr.rd:fr.wr])
	if err != nil {
		n := CheckHeaderLen
		if err == errReadRequestLength && fr.fillFrame(ReadRequestHeaderLen) == nil {
			n = ReadRequestHeaderLen
		}
		copy(fr.hdr[:], fr.buf[fr.rd:fr.rd+n])
		return Header(fr.hdr[:n]), fr.fail(err)
	}
	if err := fr.fillFrame(hl); err != nil {
		return nil, fr.fail(err)
	}
	h := Header(fr.hdr[:hl])
	copy(h, fr.buf[fr.rd:fr.rd+hl])
	fr.rd += hl
	ulpdu := h.ULPDULength()
	fr.left = ulpdu - (hl - ULPDULengthLen)
	fr.trailer = PadLen(ulpdu) + CRCLen
	fr.inFrame = true
	if fr.crcOn {
		fr.sum = UpdateCRC32c(0, h)
	}
	return h, nil
}

// ReadPayload copies the next min(len(dst), PayloadLeft()) payload bytes
// of the current FPDU into dst and returns how many it copied. Bytes
// already buffered are copied from the buffer; a large remainder is read
// from the underlying reader straight into dst.
func (fr *FrameReader) ReadPayload(dst []byte) (int, error) {
	if fr.err != nil {
		return 0, fr.err
	}
	n := min(len(dst), fr.left)
	dst = dst[:n]
	for done := 0; done < n; {
		if fr.rd == fr.wr && n-done >= directReadMin {
			m, err := fr.readDirect(dst[done:])
			done += m
			if err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return done, fr.fail(err)
			}
			continue
		}
		if err := fr.fillFrame(1); err != nil {
			return done, fr.fail(err)
		}
		m := copy(dst[done:], fr.buf[fr.rd:fr.wr])
		fr.rd += m
		done += m
	}
	if fr.crcOn {
		fr.sum = UpdateCRC32c(fr.sum, dst)
	}
	fr.left -= n
	return n, nil
}

// readDirect reads the rest of a payload, dst, from the underlying reader
// into place; the buffer is empty. With a VectorReader each read also
// fills the buffer with what follows the payload, so that the next
// header does not cost a read of its own.
func (fr *FrameReader) readDirect(dst []byte) (int, error) {
	if fr.rv == nil {
		return io.ReadFull(fr.r, dst)
	}
	fr.rd, fr.wr = 0, 0
	done := 0
	for empty := 0; done < len(dst); {
		m, err := fr.rv.ReadVec(dst[done:], fr.buf)
		if m > len(dst)-done {
			fr.wr = m - (len(dst) - done)
			m = len(dst) - done
		}
		done += m
		if done == len(dst) {
			return done, nil
		}
		if err != nil {
			return done, err
		}
		if m == 0 {
			if empty++; empty >= 100 {
				return done, io.ErrNoProgress
			}
		}
	}
	return done, nil
}

// Discard skips the unread payload of the current FPDU. The CRC, when
// enabled, still covers it.
func (fr *FrameReader) Discard() error {
	if fr.err != nil {
		return fr.err
	}
	for fr.left > 0 {
		if err := fr.fillFrame(1); err != nil {
			return fr.fail(err)
		}
		m := min(fr.left, fr.wr-fr.rd)
		if fr.crcOn {
			fr.sum = UpdateCRC32c(fr.sum, fr.buf[fr.rd:fr.rd+m])
		}
		fr.rd += m
		fr.left -= m
	}
	return nil
}

// Finish completes the current FPDU: it discards unread payload, reads the
// pad and the CRC field and, with CRC enabled, checks the CRC (a mismatch
// is a *ProtocolError with cause TermLLPCRC). Without a current FPDU it
// does nothing.
func (fr *FrameReader) Finish() error {
	if fr.err != nil {
		return fr.err
	}
	if !fr.inFrame {
		return nil
	}
	if err := fr.Discard(); err != nil {
		return err
	}
	if err := fr.fillFrame(fr.trailer); err != nil {
		return fr.fail(err)
	}
	t := fr.buf[fr.rd : fr.rd+fr.trailer]
	fr.rd += fr.trailer
	fr.inFrame = false
	if fr.crcOn {
		pad := len(t) - CRCLen
		if UpdateCRC32c(fr.sum, t[:pad]) != GetCRC(t[pad:]) {
			return fr.fail(errCRC)
		}
	}
	return nil
}
