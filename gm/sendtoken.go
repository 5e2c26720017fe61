package gm

import "errors"

// GM's send-token accounting helpers (gm_free_send_tokens,
// gm_alloc_send_token, gm_free_send_token, gm_send_token_available).
//
// In GM these are optional bookkeeping inside the library, for clients that
// want GM to count their tokens: two counters, one per priority, that start
// at 0. The client deposits tokens into them, takes one before each send and
// gives it back in the send's callback. They never take or return the port's
// real send tokens: every send call still takes a real token itself, and
// fails with ErrNoSendToken when none is free.
//
// This implementation keeps that model and adds one rule that makes the
// counters trustworthy: the tokens deposited into both priorities together
// may not exceed NumSendTokens. Then a client that calls AllocSendToken
// before each of its sends (SendWithCallback, Put, Get, ResumeSending,
// DropSends, ...) and FreeSendToken in that send's callback never gets
// ErrNoSendToken, because it never has more sends outstanding than real
// tokens exist, and a send's real token is free again before its callback
// runs. A client that also sends without accounting can still run out of
// real tokens; the counters do not know about those sends.

// ErrTokenAccounting reports misuse of the send-token accounting helpers:
// depositing more tokens than the port has, a negative count, or freeing
// more tokens of a priority than were allocated.
var ErrTokenAccounting = errors.New("gm: send-token accounting: more tokens than the port has, or freed more than allocated")

// sendTokenAccounts are the counters of the helpers.
type sendTokenAccounts struct {
	deposited [NumPriorities]int // tokens deposited per priority
	avail     [NumPriorities]int // of those, not allocated
}

// deposit adds count tokens to pri if the total stays within limit.
func (a *sendTokenAccounts) deposit(pri Priority, count, limit int) error {
	if pri >= NumPriorities {
		return ErrPriority
	}
	if count < 0 || a.deposited[LowPriority]+a.deposited[HighPriority]+count > limit {
		return ErrTokenAccounting
	}
	a.deposited[pri] += count
	a.avail[pri] += count
	return nil
}

func (a *sendTokenAccounts) alloc(pri Priority) bool {
	if pri >= NumPriorities || a.avail[pri] == 0 {
		return false
	}
	a.avail[pri]--
	return true
}

func (a *sendTokenAccounts) free(pri Priority) error {
	if pri >= NumPriorities {
		return ErrPriority
	}
	if a.avail[pri] >= a.deposited[pri] {
		return ErrTokenAccounting
	}
	a.avail[pri]++
	return nil
}

func (a *sendTokenAccounts) available(pri Priority) bool {
	return pri < NumPriorities && a.avail[pri] > 0
}

// DepositSendTokens is gm_free_send_tokens(p, pri, count): it adds count
// tokens to the accounting counter of priority pri (the counters start at
// 0). It is named differently because FreeSendTokens already reports the
// number of free real send tokens. The tokens deposited into both
// priorities together may not exceed NumSendTokens (ErrTokenAccounting);
// a negative count is ErrTokenAccounting, a bad priority ErrPriority. It
// does not touch the real send tokens.
func (p *Port) DepositSendTokens(pri Priority, count int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tokAcct.deposit(pri, count, p.eng.SendTokens().Total())
}

// AllocSendToken is gm_alloc_send_token: it takes one token from the
// accounting counter of pri and reports whether one was there (GM returns
// non-zero). It does not reserve a real send token (see
// DepositSendTokens).
func (p *Port) AllocSendToken(pri Priority) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tokAcct.alloc(pri)
}

// FreeSendToken is gm_free_send_token: it gives one token back to the
// accounting counter of pri, normally from a send's callback. Freeing more
// tokens than were allocated is ErrTokenAccounting (GM did not check). It
// does not release a real send token: the port does that itself when the
// send completes.
func (p *Port) FreeSendToken(pri Priority) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tokAcct.free(pri)
}

// SendTokenAvailable is gm_send_token_available: whether AllocSendToken(pri)
// would succeed now.
func (p *Port) SendTokenAvailable(pri Priority) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tokAcct.available(pri)
}
