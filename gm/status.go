package gm

import (
	"fmt"
	"os"
)

// Status is gm_status_t: a GM status code. The values are GM's, unchanged.
// A non-zero Status is an error; Success is returned as a nil error by the
// functions of this package, but send callbacks receive it as a Status.
type Status int

// The GM status codes (gm.h, GM 2.0.16 API level).
const (
	Success                   Status = 0  // GM_SUCCESS
	Failure                   Status = 1  // GM_FAILURE
	InputBufferTooSmall       Status = 2  // GM_INPUT_BUFFER_TOO_SMALL
	OutputBufferTooSmall      Status = 3  // GM_OUTPUT_BUFFER_TOO_SMALL
	TryAgain                  Status = 4  // GM_TRY_AGAIN
	Busy                      Status = 5  // GM_BUSY: the port is open in another process
	MemoryFault               Status = 6  // GM_MEMORY_FAULT
	Interrupted               Status = 7  // GM_INTERRUPTED
	InvalidParameter          Status = 8  // GM_INVALID_PARAMETER: a malformed node map
	OutOfMemory               Status = 9  // GM_OUT_OF_MEMORY
	InvalidCommand            Status = 10 // GM_INVALID_COMMAND
	PermissionDenied          Status = 11 // GM_PERMISSION_DENIED: a reserved port, a missing capability (CAP_NET_RAW), an unreadable map
	InternalError             Status = 12 // GM_INTERNAL_ERROR
	Unattached                Status = 13 // GM_UNATTACHED
	UnsupportedDevice         Status = 14 // GM_UNSUPPORTED_DEVICE: not an Ethernet interface, or its MTU is too small
	SendTimedOut              Status = 15 // GM_SEND_TIMED_OUT: no receive buffer within the progress timeout
	SendRejected              Status = 16 // GM_SEND_REJECTED: size class not acceptable at the target
	SendTargetPortClosed      Status = 17 // GM_SEND_TARGET_PORT_CLOSED
	SendTargetNodeUnreachable Status = 18 // GM_SEND_TARGET_NODE_UNREACHABLE
	SendDropped               Status = 19 // GM_SEND_DROPPED: removed by DropSends (not an error)
	SendPortClosed            Status = 20 // GM_SEND_PORT_CLOSED (internal in GM; unused)
	NodeIDNotYetSet           Status = 21 // GM_NODE_ID_NOT_YET_SET: a send before a node map lists this host
	StillShuttingDown         Status = 22 // GM_STILL_SHUTTING_DOWN
	CloneBusy                 Status = 23 // GM_CLONE_BUSY
	NoSuchDevice              Status = 24 // GM_NO_SUCH_DEVICE: no such interface
	Aborted                   Status = 25 // GM_ABORTED
	IncompatibleLibAndDriver  Status = 26 // GM_INCOMPATIBLE_LIB_AND_DRIVER
	UntranslatedSystemError   Status = 27 // GM_UNTRANSLATED_SYSTEM_ERROR
	AccessDenied              Status = 28 // GM_ACCESS_DENIED
	NoDriverSupport           Status = 29 // GM_NO_DRIVER_SUPPORT
	PTERefCntOverflow         Status = 30 // GM_PTE_REF_CNT_OVERFLOW
	NotSupportedInKernel      Status = 31 // GM_NOT_SUPPORTED_IN_KERNEL
	NotSupportedOnArch        Status = 32 // GM_NOT_SUPPORTED_ON_ARCH
	NoMatch                   Status = 33 // GM_NO_MATCH: unknown host name, node id or unique id
	UserError                 Status = 34 // GM_USER_ERROR
	TimedOut                  Status = 35 // GM_TIMED_OUT
	DataCorrupted             Status = 36 // GM_DATA_CORRUPTED
	HardwareFault             Status = 37 // GM_HARDWARE_FAULT
	SendOrphaned              Status = 38 // GM_SEND_ORPHANED (never produced)
	MinorOverflow             Status = 39 // GM_MINOR_OVERFLOW
	PageTableFull             Status = 40 // GM_PAGE_TABLE_FULL
	UCError                   Status = 41 // GM_UC_ERROR
	InvalidPortNumber         Status = 42 // GM_INVALID_PORT_NUMBER
	DevNotFound               Status = 43 // GM_DEV_NOT_FOUND
	FirmwareNotRunning        Status = 44 // GM_FIRMWARE_NOT_RUNNING
	YPNoMatch                 Status = 45 // GM_YP_NO_MATCH
	SRAMParityError           Status = 46 // GM_SRAM_PARITY_ERROR
	FirmwareAbort             Status = 47 // GM_FIRMWARE_ABORT
	// NumStatusCodes is GM_NUM_STATUS_CODES, the number of codes.
	NumStatusCodes Status = 48
)

var statusNames = [...]string{
	"GM_SUCCESS", "GM_FAILURE", "GM_INPUT_BUFFER_TOO_SMALL", "GM_OUTPUT_BUFFER_TOO_SMALL",
	"GM_TRY_AGAIN", "GM_BUSY", "GM_MEMORY_FAULT", "GM_INTERRUPTED", "GM_INVALID_PARAMETER",
	"GM_OUT_OF_MEMORY", "GM_INVALID_COMMAND", "GM_PERMISSION_DENIED", "GM_INTERNAL_ERROR",
	"GM_UNATTACHED", "GM_UNSUPPORTED_DEVICE", "GM_SEND_TIMED_OUT", "GM_SEND_REJECTED",
	"GM_SEND_TARGET_PORT_CLOSED", "GM_SEND_TARGET_NODE_UNREACHABLE", "GM_SEND_DROPPED",
	"GM_SEND_PORT_CLOSED", "GM_NODE_ID_NOT_YET_SET", "GM_STILL_SHUTTING_DOWN", "GM_CLONE_BUSY",
	"GM_NO_SUCH_DEVICE", "GM_ABORTED", "GM_INCOMPATIBLE_LIB_AND_DRIVER",
	"GM_UNTRANSLATED_SYSTEM_ERROR", "GM_ACCESS_DENIED", "GM_NO_DRIVER_SUPPORT",
	"GM_PTE_REF_CNT_OVERFLOW", "GM_NOT_SUPPORTED_IN_KERNEL", "GM_NOT_SUPPORTED_ON_ARCH",
	"GM_NO_MATCH", "GM_USER_ERROR", "GM_TIMED_OUT", "GM_DATA_CORRUPTED", "GM_HARDWARE_FAULT",
	"GM_SEND_ORPHANED", "GM_MINOR_OVERFLOW", "GM_PAGE_TABLE_FULL", "GM_UC_ERROR",
	"GM_INVALID_PORT_NUMBER", "GM_DEV_NOT_FOUND", "GM_FIRMWARE_NOT_RUNNING", "GM_YP_NO_MATCH",
	"GM_SRAM_PARITY_ERROR", "GM_FIRMWARE_ABORT",
}

var statusText = [...]string{
	"success", "unspecified failure", "input buffer is too small", "output buffer is too small",
	"try again", "busy (port already open)", "memory fault", "interrupted", "invalid parameter",
	"out of memory", "invalid command", "permission denied", "internal error", "unattached",
	"unsupported device",
	"send timed out: the target port provided no receive buffer of the message's size and priority",
	"send rejected: the size class is not acceptable at the target",
	"send failed: the target port is closed",
	"send failed: the target node is unreachable",
	"send dropped by gm_drop_sends",
	"send port closed", "node id not yet set (this host is not in the node map)",
	"port still shutting down", "clone busy", "no such device", "aborted",
	"library and driver are incompatible", "untranslated system error", "access denied",
	"no driver support", "page table entry reference count overflow", "not supported in kernel",
	"not supported on this architecture", "no match", "user error", "timed out",
	"data corrupted", "hardware fault", "send orphaned", "minor overflow", "page table full",
	"uncorrectable error", "invalid port number", "device not found", "firmware not running",
	"yellow pages: no match", "SRAM parity error", "firmware abort",
}

// String returns the GM name of the status, such as "GM_SEND_TIMED_OUT".
func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("GM_STATUS(%d)", int(s))
}

// Error implements error: the GM name followed by Strerror's text.
func (s Status) Error() string { return "gm: " + s.String() + ": " + Strerror(s) }

// Strerror is gm_strerror: a human-readable description of s.
func Strerror(s Status) string {
	if s >= 0 && int(s) < len(statusText) {
		return statusText[s]
	}
	return "unknown status"
}

// Perror is gm_perror: it prints msg, a colon and the description of s to
// standard error.
func Perror(msg string, s Status) {
	fmt.Fprintf(os.Stderr, "%s: %s\n", msg, Strerror(s))
}

// statusError is an error of status st with the message msg, which says
// what happened; it wraps st and cause (errors.Is finds both) without
// repeating the cause's text.
type statusError struct {
	st    Status
	msg   string
	cause error
}

func (e *statusError) Error() string { return e.st.Error() + ": " + e.msg }

func (e *statusError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.st}
	}
	return []error{e.st, e.cause}
}
