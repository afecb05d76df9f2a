package driver

import corev1 "k8s.io/api/core/v1"

// Event is one Kubernetes Event to record on a pipeline, as data: the
// controller records it after the status that it tells of is stored; the
// simulator may keep it.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type   string
	Reason string
	// Action is what phasegang did: "Run" (the reconciler's step),
	// "Schedule" (a scheduling cycle), "Validate".
	Action  string
	Message string
}

func normal(reason, action, msg string) Event {
	return Event{Type: corev1.EventTypeNormal, Reason: reason, Action: action, Message: msg}
}

func warning(reason, action, msg string) Event {
	return Event{Type: corev1.EventTypeWarning, Reason: reason, Action: action, Message: msg}
}
