package longhaul

import "regexp"

// DocumentSearchTool is the name of the tool that searches a run's vector
// stores (the documents skill's): the engine offers it only to a run that
// has vector stores.
const DocumentSearchTool = "document_search"

// MaxVectorStores bounds the vector stores one run searches: an agent's
// and a request's together.
const MaxVectorStores = 16

// vectorStoreID is the form of a vector store id: "vs_" and letters or
// digits, as OpenAI's ids and Longhaul's ("vs_" and 24 hex digits) are.
var vectorStoreID = regexp.MustCompile(`^vs_[A-Za-z0-9]{1,64}$`)

// ValidVectorStoreID reports whether id has the form of a vector store id.
// It says nothing of whether the store exists or whose it is.
func ValidVectorStoreID(id string) bool {
	return vectorStoreID.MatchString(id)
}
