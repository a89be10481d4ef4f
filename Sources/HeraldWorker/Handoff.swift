import Foundation

/// A bounded hand-off between one producer thread and one consumer thread.
///
/// `@unchecked Sendable`: `items`, `finished` and `closed` are only touched under `condition`'s lock.
final class Handoff<Item: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var items: [Item] = []
    private var finished = false
    private var closed = false
    private var puts = 0
    private var takes = 0
    private let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    /// Waits for room; returns false (keeping nothing) once the consumer has closed the hand-off.
    /// With `waitUntilTaken`, also waits until the consumer has taken `item`, so the producer never
    /// runs more than one item ahead.
    func put(_ item: Item, waitUntilTaken: Bool = false) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !closed { condition.wait() }
        guard !closed else { return false }
        items.append(item)
        puts += 1
        let ticket = puts
        condition.broadcast()
        while waitUntilTaken && takes < ticket && !closed { condition.wait() }
        return takes >= ticket || !waitUntilTaken
    }

    /// Takes whatever is waiting without blocking (the hand-off stays open).
    func drain() -> [Item] {
        condition.lock()
        defer { condition.unlock() }
        let rest = items
        takes += rest.count
        items = []
        condition.broadcast()
        return rest
    }

    /// Waits for an item; nil once the producer has finished and everything was taken.
    func take() -> Item? {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !finished { condition.wait() }
        guard !items.isEmpty else { return nil }
        takes += 1
        condition.broadcast()
        return items.removeFirst()
    }

    /// The producer will put nothing more.
    func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// The consumer stops: wakes the producer and returns what was still waiting.
    func close() -> [Item] {
        condition.lock()
        defer { condition.unlock() }
        closed = true
        condition.broadcast()
        let rest = items
        items = []
        return rest
    }
}
