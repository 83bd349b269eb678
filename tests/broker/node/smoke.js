// Connects to process.argv[2], declares a queue, publishes with confirms, consumes, acks.
const amqp = require("amqplib");

async function main(url) {
  const conn = await amqp.connect(url);
  const ch = await conn.createConfirmChannel();
  const { queue } = await ch.assertQueue("", { exclusive: true });
  for (let i = 0; i < 10; i++) ch.sendToQueue(queue, Buffer.from(`m${i}`), { headers: { i } });
  await ch.waitForConfirms();
  const got = [];
  await new Promise((resolve) => {
    ch.consume(queue, (msg) => {
      got.push(msg.content.toString());
      ch.ack(msg);
      if (got.length === 10) resolve();
    });
  });
  await ch.close();
  await conn.close();
  console.log(JSON.stringify(got));
}

main(process.argv[2]).catch((e) => { console.error(e); process.exit(1); });
