package proto

// MaxSendTokens is the largest Config.SendTokens the engine honours. A
// sending stream queues at most qCap records: the port's own sends, puts
// and gets (one send token each, all possibly on one stream) and up to
// ReplySlots replies to the gets of peers that predate reply streams
// (reply.go; the others' replies queue on the reply stream), which take no
// token. With at most
// MaxSendTokens tokens the queue can never be full when one of them
// arrives; Send and the remote calls still refuse (ErrNoSendToken) rather
// than overwrite a queued record if it is.
const MaxSendTokens = qCap - ReplySlots
