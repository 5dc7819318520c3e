package syncer

import (
	"fmt"

	"github.com/gpuvc/gpuvc/manager/api/contract"
)

// Kueue's plain-Pod integration queues a pod that carries its queue-name label.
// Which pods queue is the team policy's choice, never the tenant's: a queueing
// team's GPU pods (whole GPUs, MIG slices, and the reservations that hold the
// GPUs of fractional pods) name the team's LocalQueue; every other pod carries
// no queue label, so it neither waits in Kueue nor depends on Kueue being up.

// wantsKueueQueue is the queue the pod must name: the team's LocalQueue for a
// GPU pod of a queueing team, "" otherwise.
func wantsKueueQueue(in *Input) string {
	if in.Policy.KueueQueue == "" || totalDevices(podDevices(in.Pod)) == 0 {
		return ""
	}
	return in.Policy.KueueQueue
}

func mutateKueueQueue(in *Input) []Note {
	want := wantsKueueQueue(in)
	have, has := in.Pod.Labels[contract.LabelKueueQueueName]
	switch {
	case want == "" && !has, has && have == want:
		return nil
	case want == "":
		delete(in.Pod.Labels, contract.LabelKueueQueueName)
		return []Note{{Warning, ReasonKueueQueueSet, fmt.Sprintf("label %s=%s removed: only the GPU pods of a queueing team wait in Kueue, in the team's queue", contract.LabelKueueQueueName, have)}}
	}
	if in.Pod.Labels == nil {
		in.Pod.Labels = map[string]string{}
	}
	in.Pod.Labels[contract.LabelKueueQueueName] = want
	if !has {
		return []Note{{"", ReasonKueueQueueSet, fmt.Sprintf("label %s=%s set: the pod waits in team %s's queue until its GPUs are free", contract.LabelKueueQueueName, want, in.Policy.Team)}}
	}
	return []Note{{Warning, ReasonKueueQueueSet, fmt.Sprintf("label %s=%s replaced by %s: team %s's queue", contract.LabelKueueQueueName, have, want, in.Policy.Team)}}
}

// mutateRestoreKueueQueue keeps the Kueue queue label gpuvc set on CREATE: a
// relabelled or unlabelled pod would leave Kueue's accounting or escape it.
func mutateRestoreKueueQueue(in *Input) []Note {
	old, hadOld := in.Old.Labels[contract.LabelKueueQueueName]
	have, has := in.Pod.Labels[contract.LabelKueueQueueName]
	if hadOld == has && old == have {
		return nil
	}
	if !hadOld {
		delete(in.Pod.Labels, contract.LabelKueueQueueName)
	} else {
		if in.Pod.Labels == nil {
			in.Pod.Labels = map[string]string{}
		}
		in.Pod.Labels[contract.LabelKueueQueueName] = old
	}
	return []Note{{Warning, ReasonKueueQueueSet, fmt.Sprintf("label %s restored to %q: the queue is chosen by the team policy", contract.LabelKueueQueueName, old)}}
}
