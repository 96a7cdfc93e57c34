'use strict'
// One kafkajs producer or consumer, driven line by line from tests/clients/test_kafkajs.py.
//
// Each stdin line is a JSON command {id, op, ...}; each gets one stdout line
// {id, ok: true, result} or {id, ok: false, error}. The first command makes the object
// ("producer" or "consumer"); the rest call it. Keys and values travel as base64.
// kafkajs's own log lines go to stderr. End of stdin ends the process.
//
// Run with NODE_PATH naming the node_modules that holds the pinned kafkajs.

const readline = require('readline')
const { Kafka, Partitioners, logLevel } = require('kafkajs')

// records per producer.send(): kafkajs sends each call as one batch per partition
const SEND_CHUNK = 500

const b64 = buffer => (buffer == null ? null : Buffer.from(buffer).toString('base64'))
const bytes = text => (text == null ? null : Buffer.from(text, 'base64'))
const errorText = error => `${error.name}: ${error.message}`

const logCreator = () => ({ namespace, level, label, log }) => {
  const { message, ...extra } = log
  process.stderr.write(
    `${new Date().toISOString()} ${label} [${namespace}] ${message} ${JSON.stringify(extra)}\n`
  )
}

function kafkaFor(bootstrap, clientId) {
  return new Kafka({
    clientId,
    brokers: bootstrap.split(','),
    logLevel: logLevel.INFO,
    logCreator,
  })
}

// -- producer ------------------------------------------------------------------------------

function makeProducer({ bootstrap, idempotent, acks, one_partition_per_send }) {
  const kafka = kafkaFor(bootstrap, 'pykraft-kafkajs-producer')
  // kafkajs's default partitioner (Java's murmur2), remembering where each message went:
  // a send answers one base offset per partition, and the messages of a partition are
  // written in the order given
  const partitionOf = new WeakMap()
  const createPartitioner = () => {
    const inner = Partitioners.DefaultPartitioner()
    return args => {
      const partition = inner(args)
      partitionOf.set(args.message, partition)
      return partition
    }
  }
  // idempotent: acks must be -1 and retries default to MAX_SAFE_INTEGER; kafkajs serialises
  // an idempotent producer's requests per broker itself (eosManager.acquireBrokerLock), so
  // maxInFlightRequests stays at its default
  const producer = kafka.producer({ idempotent, createPartitioner })
  const admin = kafka.admin()
  const partitionsOfTopic = new Map()
  const acknowledged = [] // [value, partition, offset], in the order the answers came
  const failures = []
  // One send() at a time: kafkajs rolls a failed request's sequence back and retries it, so
  // a later send() issued meanwhile could be written before it; awaiting each keeps the
  // send order, as a kafkajs application that needs order does.
  let queue = Promise.resolve()

  async function sendMessages(topic, messages, values) {
    let answers
    try {
      answers = await producer.send({ topic, messages, acks })
    } catch (error) {
      for (let i = 0; i < messages.length; i++) failures.push(errorText(error))
      return
    }
    if (acks === 0) return
    const next = new Map()
    for (const { partition, baseOffset } of answers) next.set(partition, Number(baseOffset))
    for (const [i, message] of messages.entries()) {
      const partition = partitionOf.get(message)
      const offset = next.get(partition)
      if (offset === undefined) {
        failures.push(`send() resolved without an answer for partition ${partition}`)
        continue
      }
      next.set(partition, offset + 1)
      acknowledged.push([values[i], partition, offset])
    }
  }

  // kafkajs 2.2.4 (producer/sendMessages.js) retries a send() only on the brokers that have
  // not answered it yet: when a partition's leadership moves to a broker that already
  // answered for another partition of the same send(), the moved partition's records are
  // never sent again and send() resolves without them. A producer that must survive a
  // leader's kill sends each partition's records on a send() of their own (partitioned by
  // kafkajs's default partitioner, as above).
  async function byPartition(topic, messages) {
    if (!partitionsOfTopic.has(topic)) {
      const { topics } = await admin.fetchTopicMetadata({ topics: [topic] })
      partitionsOfTopic.set(topic, topics[0].partitions)
    }
    const partitionMetadata = partitionsOfTopic.get(topic)
    const choose = Partitioners.DefaultPartitioner()
    const groups = new Map()
    for (const [i, message] of messages.entries()) {
      const partition = choose({ topic, partitionMetadata, message })
      if (!groups.has(partition)) groups.set(partition, [])
      groups.get(partition).push([{ ...message, partition }, i])
    }
    return [...groups.values()]
  }

  async function sendChunk(topic, pairs) {
    const messages = pairs.map(([key, value]) => ({ key: bytes(key), value: bytes(value) }))
    const values = pairs.map(([, value]) => value)
    if (!one_partition_per_send) return sendMessages(topic, messages, values)
    for (const group of await byPartition(topic, messages)) {
      await sendMessages(topic, group.map(([m]) => m), group.map(([, i]) => values[i]))
    }
  }

  return {
    async connect() {
      await admin.connect()
      await producer.connect()
    },
    send({ topic, pairs }) {
      for (let start = 0; start < pairs.length; start += SEND_CHUNK) {
        const chunk = pairs.slice(start, start + SEND_CHUNK)
        queue = queue.then(() => sendChunk(topic, chunk))
      }
      return null
    },
    async flush({ timeout_ms }) {
      let timer
      const expired = new Promise(resolve => {
        timer = setTimeout(() => resolve(true), timeout_ms)
      })
      const late = await Promise.race([queue.then(() => false), expired])
      clearTimeout(timer)
      if (late) throw new Error(`records still unanswered after ${timeout_ms} ms`)
      return null
    },
    acknowledged: ({ since }) => acknowledged.slice(since),
    failures: () => failures,
    async close() {
      await producer.disconnect()
      await admin.disconnect()
      return null
    },
  }
}

// -- consumer ------------------------------------------------------------------------------

function makeConsumer({ bootstrap, group, topic, session_timeout_ms, heartbeat_interval_ms }) {
  const kafka = kafkaFor(bootstrap, 'pykraft-kafkajs-consumer')
  const consumer = kafka.consumer({
    groupId: group,
    sessionTimeout: session_timeout_ms,
    heartbeatInterval: heartbeat_interval_ms,
    // kafkajs heartbeats between fetches: at its default 5 s fetch wait an idle member
    // would notice a rebalance only seconds later, near the scenarios' session timeout
    maxWaitTimeInMs: 500,
  })
  const admin = kafka.admin()
  let buffer = []
  let wake = null // resolves a poll waiting for records
  let assigned = []
  let positions = new Map()

  // kafkajs starts every partition of a new generation from its committed offset, so the
  // positions learnt from consumption start over at each join
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    assigned = payload.memberAssignment[topic] || []
    positions = new Map()
  })
  consumer.on(consumer.events.REBALANCING, () => {
    assigned = []
  })
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    process.stderr.write(`consumer crashed: ${payload.error} (restart: ${payload.restart})\n`)
    assigned = []
  })

  return {
    async connect() {
      await admin.connect()
      await consumer.connect()
      await consumer.subscribe({ topics: [topic], fromBeginning: true })
      await consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          const offset = Number(message.offset)
          buffer.push([partition, offset, b64(message.key), b64(message.value)])
          positions.set(partition, offset + 1)
          if (wake !== null) wake()
        },
      })
    },
    async poll({ timeout_ms }) {
      if (buffer.length === 0 && timeout_ms > 0) {
        await new Promise(resolve => {
          const timer = setTimeout(resolve, timeout_ms)
          wake = () => {
            clearTimeout(timer)
            resolve()
          }
        })
        wake = null
      }
      const read = buffer
      buffer = []
      return read
    },
    assignment: () => assigned,
    positions: () => Object.fromEntries([...positions].filter(([p]) => assigned.includes(p))),
    async commit() {
      const partitions = [...positions]
        .filter(([p]) => assigned.includes(p))
        .map(([partition, offset]) => ({ topic, partition, offset: String(offset) }))
      if (partitions.length > 0) await consumer.commitOffsets(partitions)
      return null
    },
    async committed() {
      const [found] = await admin.fetchOffsets({ groupId: group, topics: [topic] })
      return Object.fromEntries(
        found.partitions
          .filter(({ offset }) => Number(offset) >= 0)
          .map(({ partition, offset }) => [partition, Number(offset)])
      )
    },
    async close() {
      await consumer.disconnect()
      await admin.disconnect()
      return null
    },
  }
}

// -- the command loop ----------------------------------------------------------------------

const makers = { producer: makeProducer, consumer: makeConsumer }
let target = null

function answer(id, outcome) {
  process.stdout.write(JSON.stringify({ id, ...outcome }) + '\n')
}

async function handle(command) {
  const { id, op, ...args } = command
  try {
    if (target === null) {
      if (!(op in makers)) throw new Error(`the first command makes the object, not ${op}`)
      target = makers[op](args)
      await target.connect()
      answer(id, { ok: true, result: null })
      return
    }
    if (!(op in target) || op === 'connect') throw new Error(`unknown command ${op}`)
    answer(id, { ok: true, result: (await target[op](args)) ?? null })
  } catch (error) {
    answer(id, { ok: false, error: errorText(error) })
  }
}

readline
  .createInterface({ input: process.stdin })
  .on('line', line => {
    handle(JSON.parse(line))
  })
  .on('close', () => process.exit(0))
