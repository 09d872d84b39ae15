package slot_test

import (
	"fmt"

	"github.com/quorumlock/quorumlock/internal/slot"
)

func ExampleOf() {
	fmt.Println(slot.Of("orders"), slot.Of("quorumlock:fence:{orders}"))
	// Output: 105 105
}

func ExampleTag() {
	fmt.Println(slot.Tag("quorumlock:fence:{orders}"), slot.Tag("orders"), slot.Tag("a{}b"))
	// Output: orders orders a{}b
}

func ExampleTagFor() {
	s := slot.Of("orders")
	tag, err := slot.TagFor(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	floor := "quorumlock:fence-floor:{" + tag + "}"
	fmt.Println(floor, slot.Of(floor) == s)
	// Output: quorumlock:fence-floor:{LINLH} true
}
