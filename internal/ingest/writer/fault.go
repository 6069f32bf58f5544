package writer

// FaultPoint names a point of the insert path where Deps.Fault is called, so that a test can
// crash the process exactly there.
type FaultPoint string

const (
	// FaultInserted is after a batch's inserts succeeded, before its plan is marked inserted.
	FaultInserted FaultPoint = "inserted"
	// FaultMarked is after the plan is marked inserted, before the batch's frames are
	// acknowledged (only with a journal).
	FaultMarked FaultPoint = "marked"
)

// fault calls Deps.Fault at point p, when it is set.
func (w *Writer) fault(p FaultPoint) {
	if w.deps.Fault != nil {
		w.deps.Fault(p)
	}
}
