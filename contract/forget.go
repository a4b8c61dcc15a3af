package contract

// DeletedRunKind is the kind of the blob that marks a run deleted: the API
// reads a run so marked as gone (404), whatever Temporal still holds of it.
// The Responses API writes it when it deletes a run (DELETE, or a store:
// false response whose request ended), and a run not to be kept
// (AgentInput.Forget) writes it itself at its end, should the API process
// have died before. It holds nothing but the run id, and goes with the
// run's other blobs when their retention ends.
const DeletedRunKind = "responses.deleted"
