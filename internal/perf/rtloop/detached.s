// Empty: lets detach.go declare the runtime functions it links to (go:linkname) without bodies.
