package testobj

import gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"

// queueing returns the Team's spec.queueing, creating it.
func (w *TeamWrapper) queueing() *gpuvcv1.Queueing {
	if w.Spec.Queueing == nil {
		w.Spec.Queueing = &gpuvcv1.Queueing{}
	}
	return w.Spec.Queueing
}

// Queued makes the Team's GPU quota elastic (spec.queueing) with no borrowing.
func (w *TeamWrapper) Queued() *TeamWrapper { w.queueing(); return w }

// Borrow lets the Team borrow n whole GPUs beyond its guarantee.
func (w *TeamWrapper) Borrow(n int32) *TeamWrapper {
	q := w.queueing()
	if q.BorrowingLimit == nil {
		q.BorrowingLimit = &gpuvcv1.GPUAmount{}
	}
	q.BorrowingLimit.GPUs = &n
	return w
}

// BorrowMIG lets the Team borrow n slices of a MIG profile.
func (w *TeamWrapper) BorrowMIG(profile string, n int32) *TeamWrapper {
	q := w.queueing()
	if q.BorrowingLimit == nil {
		q.BorrowingLimit = &gpuvcv1.GPUAmount{}
	}
	if q.BorrowingLimit.MIG == nil {
		q.BorrowingLimit.MIG = map[string]int32{}
	}
	q.BorrowingLimit.MIG[profile] = n
	return w
}

// Lend lets other teams borrow at most n of the Team's idle guaranteed GPUs.
func (w *TeamWrapper) Lend(n int32) *TeamWrapper {
	q := w.queueing()
	if q.LendingLimit == nil {
		q.LendingLimit = &gpuvcv1.GPUAmount{}
	}
	q.LendingLimit.GPUs = &n
	return w
}

// Weight sets the Team's fair-share weight.
func (w *TeamWrapper) Weight(n int32) *TeamWrapper { w.queueing().Weight = &n; return w }

// MaxQueued lets n whole GPUs of the Team's pods wait beyond its ceiling
// (spec.queueing.maxQueued.gpus).
func (w *TeamWrapper) MaxQueued(n int32) *TeamWrapper {
	q := w.queueing()
	if q.MaxQueued == nil {
		q.MaxQueued = &gpuvcv1.GPUAmount{}
	}
	q.MaxQueued.GPUs = &n
	return w
}

// MaxQueuedMIG lets n slices of a MIG profile wait beyond the Team's ceiling.
func (w *TeamWrapper) MaxQueuedMIG(profile string, n int32) *TeamWrapper {
	q := w.queueing()
	if q.MaxQueued == nil {
		q.MaxQueued = &gpuvcv1.GPUAmount{}
	}
	if q.MaxQueued.MIG == nil {
		q.MaxQueued.MIG = map[string]int32{}
	}
	q.MaxQueued.MIG[profile] = n
	return w
}

// WorkloadPriorityClasses lets the Team's pods name these Kueue
// WorkloadPriorityClasses (spec.queueing.priorityClasses).
func (w *TeamWrapper) WorkloadPriorityClasses(names ...string) *TeamWrapper {
	q := w.queueing()
	q.PriorityClasses = append(q.PriorityClasses, names...)
	return w
}
