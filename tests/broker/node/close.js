// Issue 29's case with amqplib's callback API: publishes still buffered when close() is
// called (the close goes out on channel 0 ahead of them). Prints "closed" once the close
// completes; exits 1 if it does not within 10 s or the socket fails (EPIPE, reset).
const amqp = require("amqplib/callback_api");

const [url, queue] = process.argv.slice(2);
amqp.connect(url, (err, conn) => {
  if (err) throw err;
  conn.on("error", (e) => { console.error(`connection error: ${e.message}`); process.exit(1); });
  conn.createChannel((err, ch) => {
    if (err) throw err;
    ch.assertQueue(queue, { autoDelete: false }, (err) => {
      if (err) throw err;
      for (let i = 0; i < 3000; i++) ch.sendToQueue(queue, Buffer.alloc(1000));
      const timer = setTimeout(() => { console.error("the close never completed"); process.exit(1); }, 10000);
      conn.close((err) => {
        clearTimeout(timer);
        if (err) { console.error(`close failed: ${err.message}`); process.exit(1); }
        console.log("closed");
      });
    });
  });
});
