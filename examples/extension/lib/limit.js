// The server's frame cap, shared by the local socket (lib/relay.js) and the
// remote one (lib/remote.js). Each socket's ready frame carries
// maxBodyBytes, the largest frame the server reads; a bigger one makes it
// close the socket (1009), and with the socket this client's registration.
// So a result over the cap is never sent: an error result with code
// payload_too_large goes in its place, as after a POST refused with 413
// (WIRE-5), and the caller fails at once while the socket stays up.

/** The content of the error result that replaces one over the cap. */
export const TOO_LARGE_CONTENT = JSON.stringify({
  code: 'payload_too_large', message: 'the result exceeded the server\'s body limit',
});

/** Reports whether text is more than max bytes in UTF-8. */
export function overLimit(text, max) {
  if (text.length > max) return true; // every UTF-16 unit takes at least one byte
  if (text.length * 3 <= max) return false; // and at most three
  return new TextEncoder().encode(text).length > max;
}

/**
 * The text of the result frame {"type":"result", ...body} for a socket
 * whose ready frame said maxBody (0 or missing: no cap known). Over the
 * cap it is the payload_too_large error result for body.requestId instead,
 * and tooLarge is true.
 */
export function resultFrame(body, maxBody) {
  const text = JSON.stringify({ type: 'result', ...body });
  if (!(maxBody > 0) || !overLimit(text, maxBody)) return { text, tooLarge: false };
  const err = { type: 'result', requestId: body.requestId, content: TOO_LARGE_CONTENT, isError: true };
  return { text: JSON.stringify(err), tooLarge: true };
}
