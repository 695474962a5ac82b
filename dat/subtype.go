package dat

// Subtypes (the minor code, bits 15..0 of a DAT_RETURN), in the order of
// the DAT 2.0 header dat_error.h, which fixes their values.
const (
	NoSubtype                      Subtype = iota // DAT_NO_SUBTYPE
	SubInterrupted                                // DAT_SUB_INTERRUPTED
	ResourceMemory                                // DAT_RESOURCE_MEMORY
	ResourceDevice                                // DAT_RESOURCE_DEVICE
	ResourceTEP                                   // DAT_RESOURCE_TEP
	ResourceTEVD                                  // DAT_RESOURCE_TEVD
	ResourceProtectionDomain                      // DAT_RESOURCE_PROTECTION_DOMAIN
	ResourceMemoryRegion                          // DAT_RESOURCE_MEMORY_REGION
	ResourceErrorHandler                          // DAT_RESOURCE_ERROR_HANDLER
	ResourceCredits                               // DAT_RESOURCE_CREDITS
	ResourceSRQ                                   // DAT_RESOURCE_SRQ
	InvalidHandleIA                               // DAT_INVALID_HANDLE_IA
	InvalidHandleEP                               // DAT_INVALID_HANDLE_EP
	InvalidHandleLMR                              // DAT_INVALID_HANDLE_LMR
	InvalidHandleRMR                              // DAT_INVALID_HANDLE_RMR
	InvalidHandlePZ                               // DAT_INVALID_HANDLE_PZ
	InvalidHandlePSP                              // DAT_INVALID_HANDLE_PSP
	InvalidHandleRSP                              // DAT_INVALID_HANDLE_RSP
	InvalidHandleCR                               // DAT_INVALID_HANDLE_CR
	InvalidHandleCNO                              // DAT_INVALID_HANDLE_CNO
	InvalidHandleEVDCR                            // DAT_INVALID_HANDLE_EVD_CR
	InvalidHandleEVDRequest                       // DAT_INVALID_HANDLE_EVD_REQUEST
	InvalidHandleEVDRecv                          // DAT_INVALID_HANDLE_EVD_RECV
	InvalidHandleEVDConn                          // DAT_INVALID_HANDLE_EVD_CONN
	InvalidHandleEVDAsync                         // DAT_INVALID_HANDLE_EVD_ASYNC
	InvalidHandleSRQ                              // DAT_INVALID_HANDLE_SRQ
	InvalidHandleCSP                              // DAT_INVALID_HANDLE_CSP
	InvalidHandle1                                // DAT_INVALID_HANDLE1
	InvalidHandle2                                // DAT_INVALID_HANDLE2
	InvalidHandle3                                // DAT_INVALID_HANDLE3
	InvalidHandle4                                // DAT_INVALID_HANDLE4
	InvalidHandle5                                // DAT_INVALID_HANDLE5
	InvalidHandle6                                // DAT_INVALID_HANDLE6
	InvalidHandle7                                // DAT_INVALID_HANDLE7
	InvalidHandle8                                // DAT_INVALID_HANDLE8
	InvalidHandle9                                // DAT_INVALID_HANDLE9
	InvalidHandle10                               // DAT_INVALID_HANDLE10
	InvalidArg1                                   // DAT_INVALID_ARG1
	InvalidArg2                                   // DAT_INVALID_ARG2
	InvalidArg3                                   // DAT_INVALID_ARG3
	InvalidArg4                                   // DAT_INVALID_ARG4
	InvalidArg5                                   // DAT_INVALID_ARG5
	InvalidArg6                                   // DAT_INVALID_ARG6
	InvalidArg7                                   // DAT_INVALID_ARG7
	InvalidArg8                                   // DAT_INVALID_ARG8
	InvalidArg9                                   // DAT_INVALID_ARG9
	InvalidArg10                                  // DAT_INVALID_ARG10
	InvalidStateEPUnconnected                     // DAT_INVALID_STATE_EP_UNCONNECTED
	InvalidStateEPActConnPending                  // DAT_INVALID_STATE_EP_ACTCONNPENDING
	InvalidStateEPPassConnPending                 // DAT_INVALID_STATE_EP_PASSCONNPENDING
	InvalidStateEPTentConnPending                 // DAT_INVALID_STATE_EP_TENTCONNPENDING
	InvalidStateEPConnected                       // DAT_INVALID_STATE_EP_CONNECTED
	InvalidStateEPDisconnected                    // DAT_INVALID_STATE_EP_DISCONNECTED
	InvalidStateEPReserved                        // DAT_INVALID_STATE_EP_RESERVED
	InvalidStateEPComplPending                    // DAT_INVALID_STATE_EP_COMPLPENDING
	InvalidStateEPDiscPending                     // DAT_INVALID_STATE_EP_DISCPENDING
	InvalidStateEPProviderControl                 // DAT_INVALID_STATE_EP_PROVIDERCONTROL
	InvalidStateEPNotReady                        // DAT_INVALID_STATE_EP_NOTREADY
	InvalidStateEPRecvWatermark                   // DAT_INVALID_STATE_EP_RECV_WATERMARK
	InvalidStateEPPZ                              // DAT_INVALID_STATE_EP_PZ
	InvalidStateEPEVDRequest                      // DAT_INVALID_STATE_EP_EVD_REQUEST
	InvalidStateEPEVDRecv                         // DAT_INVALID_STATE_EP_EVD_RECV
	InvalidStateEPEVDConnect                      // DAT_INVALID_STATE_EP_EVD_CONNECT
	InvalidStateEPUnconfigured                    // DAT_INVALID_STATE_EP_UNCONFIGURED
	InvalidStateEPUnconfReserved                  // DAT_INVALID_STATE_EP_UNCONFRESERVED
	InvalidStateEPUnconfPassive                   // DAT_INVALID_STATE_EP_UNCONFPASSIVE
	InvalidStateEPUnconfTentative                 // DAT_INVALID_STATE_EP_UNCONFTENTATIVE
	InvalidStateCNOInUse                          // DAT_INVALID_STATE_CNO_IN_USE
	InvalidStateCNODead                           // DAT_INVALID_STATE_CNO_DEAD
	InvalidStateEVDOpen                           // DAT_INVALID_STATE_EVD_OPEN
	InvalidStateEVDEnabled                        // DAT_INVALID_STATE_EVD_ENABLED
	InvalidStateEVDDisabled                       // DAT_INVALID_STATE_EVD_DISABLED
	InvalidStateEVDWaitable                       // DAT_INVALID_STATE_EVD_WAITABLE
	InvalidStateEVDUnwaitable                     // DAT_INVALID_STATE_EVD_UNWAITABLE
	InvalidStateEVDInUse                          // DAT_INVALID_STATE_EVD_IN_USE
	InvalidStateEVDConfigNotify                   // DAT_INVALID_STATE_EVD_CONFIG_NOTIFY
	InvalidStateEVDConfigSolicited                // DAT_INVALID_STATE_EVD_CONFIG_SOLICITED
	InvalidStateEVDConfigThreshold                // DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD
	InvalidStateEVDWaiter                         // DAT_INVALID_STATE_EVD_WAITER
	InvalidStateEVDAsync                          // DAT_INVALID_STATE_EVD_ASYNC
	InvalidStateIAInUse                           // DAT_INVALID_STATE_IA_IN_USE
	InvalidStateLMRInUse                          // DAT_INVALID_STATE_LMR_IN_USE
	InvalidStateLMRFree                           // DAT_INVALID_STATE_LMR_FREE
	InvalidStatePZInUse                           // DAT_INVALID_STATE_PZ_IN_USE
	InvalidStatePZFree                            // DAT_INVALID_STATE_PZ_FREE
	InvalidStateSRQOperational                    // DAT_INVALID_STATE_SRQ_OPERATIONAL
	InvalidStateSRQError                          // DAT_INVALID_STATE_SRQ_ERROR
	InvalidStateSRQInUse                          // DAT_INVALID_STATE_SRQ_IN_USE
	InvalidStateSRQShutdown                       // DAT_INVALID_STATE_SRQ_SHUTDOWN
	PrivilegesRead                                // DAT_PRIVILEGES_READ
	PrivilegesWrite                               // DAT_PRIVILEGES_WRITE
	PrivilegesRDMARead                            // DAT_PRIVILEGES_RDMA_READ
	PrivilegesRDMAWrite                           // DAT_PRIVILEGES_RDMA_WRITE
	ProtectionRead                                // DAT_PROTECTION_READ
	ProtectionWrite                               // DAT_PROTECTION_WRITE
	ProtectionRDMARead                            // DAT_PROTECTION_RDMA_READ
	ProtectionRDMAWrite                           // DAT_PROTECTION_RDMA_WRITE
	InvalidAddressUnsupported                     // DAT_INVALID_ADDRESS_UNSUPPORTED
	InvalidAddressUnreachable                     // DAT_INVALID_ADDRESS_UNREACHABLE
	InvalidAddressMalformed                       // DAT_INVALID_ADDRESS_MALFORMED
	NameNotRegistered                             // DAT_NAME_NOT_REGISTERED
	MajorNotFound                                 // DAT_MAJOR_NOT_FOUND
	MinorNotFound                                 // DAT_MINOR_NOT_FOUND
	ThreadSafetyNotFound                          // DAT_THREAD_SAFETY_NOT_FOUND
	numSubtypes
)

var subtypeNames = [numSubtypes]string{
	"DAT_NO_SUBTYPE",
	"DAT_SUB_INTERRUPTED",
	"DAT_RESOURCE_MEMORY",
	"DAT_RESOURCE_DEVICE",
	"DAT_RESOURCE_TEP",
	"DAT_RESOURCE_TEVD",
	"DAT_RESOURCE_PROTECTION_DOMAIN",
	"DAT_RESOURCE_MEMORY_REGION",
	"DAT_RESOURCE_ERROR_HANDLER",
	"DAT_RESOURCE_CREDITS",
	"DAT_RESOURCE_SRQ",
	"DAT_INVALID_HANDLE_IA",
	"DAT_INVALID_HANDLE_EP",
	"DAT_INVALID_HANDLE_LMR",
	"DAT_INVALID_HANDLE_RMR",
	"DAT_INVALID_HANDLE_PZ",
	"DAT_INVALID_HANDLE_PSP",
	"DAT_INVALID_HANDLE_RSP",
	"DAT_INVALID_HANDLE_CR",
	"DAT_INVALID_HANDLE_CNO",
	"DAT_INVALID_HANDLE_EVD_CR",
	"DAT_INVALID_HANDLE_EVD_REQUEST",
	"DAT_INVALID_HANDLE_EVD_RECV",
	"DAT_INVALID_HANDLE_EVD_CONN",
	"DAT_INVALID_HANDLE_EVD_ASYNC",
	"DAT_INVALID_HANDLE_SRQ",
	"DAT_INVALID_HANDLE_CSP",
	"DAT_INVALID_HANDLE1",
	"DAT_INVALID_HANDLE2",
	"DAT_INVALID_HANDLE3",
	"DAT_INVALID_HANDLE4",
	"DAT_INVALID_HANDLE5",
	"DAT_INVALID_HANDLE6",
	"DAT_INVALID_HANDLE7",
	"DAT_INVALID_HANDLE8",
	"DAT_INVALID_HANDLE9",
	"DAT_INVALID_HANDLE10",
	"DAT_INVALID_ARG1",
	"DAT_INVALID_ARG2",
	"DAT_INVALID_ARG3",
	"DAT_INVALID_ARG4",
	"DAT_INVALID_ARG5",
	"DAT_INVALID_ARG6",
	"DAT_INVALID_ARG7",
	"DAT_INVALID_ARG8",
	"DAT_INVALID_ARG9",
	"DAT_INVALID_ARG10",
	"DAT_INVALID_STATE_EP_UNCONNECTED",
	"DAT_INVALID_STATE_EP_ACTCONNPENDING",
	"DAT_INVALID_STATE_EP_PASSCONNPENDING",
	"DAT_INVALID_STATE_EP_TENTCONNPENDING",
	"DAT_INVALID_STATE_EP_CONNECTED",
	"DAT_INVALID_STATE_EP_DISCONNECTED",
	"DAT_INVALID_STATE_EP_RESERVED",
	"DAT_INVALID_STATE_EP_COMPLPENDING",
	"DAT_INVALID_STATE_EP_DISCPENDING",
	"DAT_INVALID_STATE_EP_PROVIDERCONTROL",
	"DAT_INVALID_STATE_EP_NOTREADY",
	"DAT_INVALID_STATE_EP_RECV_WATERMARK",
	"DAT_INVALID_STATE_EP_PZ",
	"DAT_INVALID_STATE_EP_EVD_REQUEST",
	"DAT_INVALID_STATE_EP_EVD_RECV",
	"DAT_INVALID_STATE_EP_EVD_CONNECT",
	"DAT_INVALID_STATE_EP_UNCONFIGURED",
	"DAT_INVALID_STATE_EP_UNCONFRESERVED",
	"DAT_INVALID_STATE_EP_UNCONFPASSIVE",
	"DAT_INVALID_STATE_EP_UNCONFTENTATIVE",
	"DAT_INVALID_STATE_CNO_IN_USE",
	"DAT_INVALID_STATE_CNO_DEAD",
	"DAT_INVALID_STATE_EVD_OPEN",
	"DAT_INVALID_STATE_EVD_ENABLED",
	"DAT_INVALID_STATE_EVD_DISABLED",
	"DAT_INVALID_STATE_EVD_WAITABLE",
	"DAT_INVALID_STATE_EVD_UNWAITABLE",
	"DAT_INVALID_STATE_EVD_IN_USE",
	"DAT_INVALID_STATE_EVD_CONFIG_NOTIFY",
	"DAT_INVALID_STATE_EVD_CONFIG_SOLICITED",
	"DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD",
	"DAT_INVALID_STATE_EVD_WAITER",
	"DAT_INVALID_STATE_EVD_ASYNC",
	"DAT_INVALID_STATE_IA_IN_USE",
	"DAT_INVALID_STATE_LMR_IN_USE",
	"DAT_INVALID_STATE_LMR_FREE",
	"DAT_INVALID_STATE_PZ_IN_USE",
	"DAT_INVALID_STATE_PZ_FREE",
	"DAT_INVALID_STATE_SRQ_OPERATIONAL",
	"DAT_INVALID_STATE_SRQ_ERROR",
	"DAT_INVALID_STATE_SRQ_IN_USE",
	"DAT_INVALID_STATE_SRQ_SHUTDOWN",
	"DAT_PRIVILEGES_READ",
	"DAT_PRIVILEGES_WRITE",
	"DAT_PRIVILEGES_RDMA_READ",
	"DAT_PRIVILEGES_RDMA_WRITE",
	"DAT_PROTECTION_READ",
	"DAT_PROTECTION_WRITE",
	"DAT_PROTECTION_RDMA_READ",
	"DAT_PROTECTION_RDMA_WRITE",
	"DAT_INVALID_ADDRESS_UNSUPPORTED",
	"DAT_INVALID_ADDRESS_UNREACHABLE",
	"DAT_INVALID_ADDRESS_MALFORMED",
	"DAT_NAME_NOT_REGISTERED",
	"DAT_MAJOR_NOT_FOUND",
	"DAT_MINOR_NOT_FOUND",
	"DAT_THREAD_SAFETY_NOT_FOUND",
}
