import Crypto
import Foundation
import HeraldTesting
import Testing

@testable import HeraldMail

/// `text` with its LF line breaks as CRLF, the way messages arrive.
func crlfMessage(_ text: String) -> [UInt8] {
    Array(text.replacingOccurrences(of: "\n", with: "\r\n").utf8)
}

@Suite struct BounceParserTests {
    let verp = VERPAddress(localPart: "bounces", domain: "herald.test", key: SymmetricKey(data: [UInt8](repeating: 7, count: 32)))

    // MARK: RFC 3464 appendix examples

    static let rfc3464Simple = """
        Date: Thu, 7 Jul 1994 17:16:05 -0400
        From: Mail Delivery Subsystem <MAILER-DAEMON@CS.UTK.EDU>
        Message-Id: <199407072116.RAA14128@CS.UTK.EDU>
        Subject: Returned mail: Cannot send message for 5 days
        To: <owner-info-mime@cs.utk.edu>
        MIME-Version: 1.0
        Content-Type: multipart/report; report-type=delivery-status;
              boundary="RAA14128.773615765/CS.UTK.EDU"

        --RAA14128.773615765/CS.UTK.EDU

        The original message was received at Sat, 2 Jul 1994 17:10:28 -0400
        from root@localhost

           ----- The following addresses had delivery problems -----
        <louisl@larry.slip.umd.edu>  (unrecoverable error)

           ----- Transcript of session follows -----
        <louisl@larry.slip.umd.edu>... Deferred: Connection timed out
                with larry.slip.umd.edu.
        Message could not be delivered for 5 days
        Message will be deleted from queue

        --RAA14128.773615765/CS.UTK.EDU
        content-type: message/delivery-status

        Reporting-MTA: dns; cs.utk.edu

        Original-Recipient: rfc822;louisl@larry.slip.umd.edu
        Final-Recipient: rfc822;louisl@larry.slip.umd.edu
        Action: failed
        Status: 4.0.0
        Diagnostic-Code: smtp; 426 connection timed out
        Last-Attempt-Date: Thu, 7 Jul 1994 17:15:49 -0400

        --RAA14128.773615765/CS.UTK.EDU
        content-type: message/rfc822

        [original message goes here]

        --RAA14128.773615765/CS.UTK.EDU--
        """

    static let rfc3464MultiRecipient = """
        Date: Fri, 8 Jul 1994 09:21:47 -0400
        From: Mail Delivery Subsystem <MAILER-DAEMON@CS.UTK.EDU>
        Subject: Returned mail: User unknown
        To: <owner-ups-mib@CS.UTK.EDU>
        MIME-Version: 1.0
        Content-Type: multipart/report; report-type=delivery-status;
              boundary="JAA13167.773673707/CS.UTK.EDU"

        --JAA13167.773673707/CS.UTK.EDU
        content-type: text/plain; charset=us-ascii

           ----- The following addresses had delivery problems -----
        <arathib@vnet.IBM.COM>  (unrecoverable error)
        <wsnell@sdcc13.ucsd.edu>  (unrecoverable error)

        --JAA13167.773673707/CS.UTK.EDU
        content-type: message/delivery-status

        Reporting-MTA: dns; cs.utk.edu

        Original-Recipient: rfc822;arathib@vnet.IBM.COM
        Final-Recipient: rfc822;arathib@vnet.ibm.com
        Action: failed
        Status: 5.0.0 (permanent failure)
        Diagnostic-Code: smtp; 550 'arathib@vnet.IBM.COM' is not a
              registered gateway user
        Remote-MTA: dns; vnet.ibm.com

        Original-Recipient: rfc822;johnh@hpnjld.njd.hp.com
        Final-Recipient: rfc822;johnh@hpnjld.njd.hp.com
        Action: delayed
        Status: 4.0.0 (hpnjld.njd.jp.com: host name lookup failure)

        Original-Recipient: rfc822;wsnell@sdcc13.ucsd.edu
        Final-Recipient: rfc822;wsnell@sdcc13.ucsd.edu
        Action: failed
        Status: 5.0.0
        Diagnostic-Code: smtp; 550 user unknown
        Remote-MTA: dns; sdcc13.ucsd.edu

        --JAA13167.773673707/CS.UTK.EDU
        content-type: message/rfc822

        [original message goes here]

        --JAA13167.773673707/CS.UTK.EDU--
        """

    static let rfc3464Gateway = """
        Date: Fri, 8 Jul 1994 09:21:47 -0400
        From: <SMTP@SYS30>
        Subject: Undeliverable Mail
        To: <owner-ups-mib@CS.UTK.EDU>
        MIME-Version: 1.0
        Content-Type: multipart/report; report-type=delivery-status;
              boundary="A41C7.838631588=_/mm1"

        --A41C7.838631588=_/mm1
        Content-Type: text/plain; charset=us-ascii

        Your message (i.e. the one that the message below refers to)
        could not be delivered: unknown permanent failure.

        --A41C7.838631588=_/mm1
        Content-Type: message/delivery-status

        Reporting-MTA: mailbus; SYS30

        Final-Recipient: unknown; nair_s
        Status: 5.0.0 (unknown permanent failure)
        Action: failed

        --A41C7.838631588=_/mm1
        Content-Type: message/rfc822

        [original message goes here]

        --A41C7.838631588=_/mm1--
        """

    static let rfc3464Delayed = """
        Date: Thu, 7 Jul 1994 17:16:05 -0400
        From: Mail Delivery Subsystem <MAILER-DAEMON@sun2.nsfnet-relay.ac.uk>
        Subject: WARNING: message delayed at "sun2.nsfnet-relay.ac.uk"
        To: <owner-info-mime@cs.utk.edu>
        MIME-Version: 1.0
        Content-Type: multipart/report; report-type=delivery-status; boundary=foobar

        --foobar
        Content-Type: text/plain

        The following message has not yet been delivered to
        thomas@de-montfort.ac.uk, despite repeated attempts over the past
        24 hours. Delivery will be retried.

        --foobar
        Content-Type: message/delivery-status

        Reporting-MTA: dns; sun2.nsfnet-relay.ac.uk

        Final-Recipient: rfc822;thomas@de-montfort.ac.uk
        Status: 4.0.0 (unknown temporary failure)
        Action: delayed

        --foobar--
        """

    @Test func rfc3464SimpleDSNWhoseRecipientFailedWithA4xxStatusIsSoft() {
        let report = BounceParser.parse(crlfMessage(Self.rfc3464Simple))
        #expect(
            report
                == BounceReport(
                    kind: .soft, format: .dsn, status: "4.0.0", recipient: "louisl@larry.slip.umd.edu",
                    diagnostic: "426 connection timed out"))
    }

    @Test func rfc3464MultiRecipientDSNReportsTheFirstFailedRecipientWithItsFoldedDiagnostic() {
        let report = BounceParser.parse(crlfMessage(Self.rfc3464MultiRecipient))
        #expect(report?.kind == .hard && report?.format == .dsn && report?.status == "5.0.0")
        #expect(report?.recipient == "arathib@vnet.ibm.com")
        #expect(report?.diagnostic == "550 'arathib@vnet.IBM.COM' is not a registered gateway user")
    }

    @Test func rfc3464GatewayDSNWithoutDiagnosticCodeExplainsWithStatusAndAction() {
        // 5.0.0 with nothing saying the address is dead: soft, so an unexplained failure suppresses no one at once.
        let report = BounceParser.parse(crlfMessage(Self.rfc3464Gateway))
        #expect(
            report
                == BounceReport(
                    kind: .soft, format: .dsn, status: "5.0.0", recipient: "nair_s",
                    diagnostic: "Status: 5.0.0 (unknown permanent failure), Action: failed"))
    }

    @Test func rfc3464DelayedDSNIsNothingToActOn() {
        #expect(BounceParser.parse(crlfMessage(Self.rfc3464Delayed)) == nil)
    }

    @Test func dsnWithLFLineEndingsReadsTheSame() {
        let lf = BounceParser.parse(Array(Self.rfc3464MultiRecipient.utf8))
        #expect(lf != nil && lf == BounceParser.parse(crlfMessage(Self.rfc3464MultiRecipient)))
    }

    // MARK: Postfix

    func postfixDSN(to: String, recipient: String, perRecipient: String, subject: String = "Undelivered Mail Returned to Sender") -> [UInt8] {
        crlfMessage(
            """
            Return-Path: <>
            Date: Mon, 12 May 2025 10:00:01 +0000 (UTC)
            From: MAILER-DAEMON@mx.herald.test (Mail Delivery System)
            Subject: \(subject)
            To: \(to)
            Auto-Submitted: auto-replied
            MIME-Version: 1.0
            Content-Type: multipart/report; report-type=delivery-status;
                boundary="3F2A01C0AA.1747044001/mx.herald.test"
            Content-Transfer-Encoding: 8bit
            Message-Id: <20250512100001.3F2A01C0AA@mx.herald.test>

            This is a MIME-encapsulated message.

            --3F2A01C0AA.1747044001/mx.herald.test
            Content-Description: Notification
            Content-Type: text/plain; charset=us-ascii

            This is the mail system at host mx.herald.test.

            I'm sorry to have to inform you that your message could not
            be delivered to one or more recipients. It's attached below.

                               The mail system

            <\(recipient)>: host mx.example.com[192.0.2.10] said: 550 5.1.1
                <\(recipient)>: Recipient address rejected: User unknown

            --3F2A01C0AA.1747044001/mx.herald.test
            Content-Description: Delivery report
            Content-Type: message/delivery-status

            Reporting-MTA: dns; mx.herald.test
            X-Postfix-Queue-ID: 3F2A01C0AA
            X-Postfix-Sender: rfc822; \(verp.address(for: 42))
            Arrival-Date: Mon, 12 May 2025 10:00:00 +0000 (UTC)

            \(perRecipient)

            --3F2A01C0AA.1747044001/mx.herald.test
            Content-Description: Undelivered Message Headers
            Content-Type: text/rfc822-headers

            Return-Path: <\(verp.address(for: 42))>
            Received: by herald.test (Herald) for <\(recipient)>;
                Mon, 12 May 2025 10:00:00 +0000 (UTC)
            From: Herald <noreply@herald.test>
            To: \(recipient)
            Subject: Confirm your email
            Message-ID: <42.herald@herald.test>

            --3F2A01C0AA.1747044001/mx.herald.test--
            """)
    }

    @Test func postfixUndeliveredMailIsHardAndItsReturnedHeadersNameTheOutboxRow() {
        let message = postfixDSN(
            to: "Herald bounces <bounces@herald.test>", recipient: "Ada@Example.com",
            perRecipient: """
                Final-Recipient: rfc822; Ada@Example.com
                Original-Recipient: rfc822;ada@example.com
                Action: failed
                Status: 5.1.1
                Remote-MTA: dns; mx.example.com
                Diagnostic-Code: smtp; 550 5.1.1 <Ada@Example.com>: Recipient address rejected:
                    User unknown in virtual mailbox table
                """)
        #expect(
            BounceParser.parse(message)
                == BounceReport(
                    kind: .hard, format: .dsn, status: "5.1.1", recipient: "ada@example.com",
                    diagnostic: "550 5.1.1 <Ada@Example.com>: Recipient address rejected: User unknown in virtual mailbox table"))
        #expect(verp.outboxIDs(in: message) == [42])
        // The returned headers alone name the row too.
        let sender = "X-Postfix-Sender: rfc822; \(verp.address(for: 42))"
        let headersOnly = String(decoding: message, as: UTF8.self).replacingOccurrences(of: sender, with: "X-Postfix-Sender: rfc822; <>")
        #expect(verp.outboxIDs(in: Array(headersOnly.utf8)) == [42])
    }

    @Test func postfixDSNThatGaveUpOnA4xxStatusIsSoft() {
        let message = postfixDSN(
            to: verp.address(for: 42), recipient: "bob@example.net",
            perRecipient: """
                Final-Recipient: rfc822; bob@example.net
                Action: failed
                Status: 4.4.1
                Diagnostic-Code: X-Postfix; connect to mx.example.net[192.0.2.20]:25: Connection
                    timed out
                """)
        let report = BounceParser.parse(message)
        #expect(report?.kind == .soft && report?.status == "4.4.1" && report?.recipient == "bob@example.net")
        #expect(report?.diagnostic == "connect to mx.example.net[192.0.2.20]:25: Connection timed out")
    }

    @Test func onlyADeadAddressIsHardAndEveryOtherFailureSoft() {
        func kind(_ status: String, _ diagnostic: String) -> BounceReport.Kind? {
            let perRecipient = "Final-Recipient: rfc822; carol@example.org\nAction: failed\nStatus: \(status)\nDiagnostic-Code: smtp; \(diagnostic)"
            return BounceParser.parse(postfixDSN(to: "x@herald.test", recipient: "carol@example.org", perRecipient: perRecipient))?.kind
        }
        #expect(kind("5.2.2", "552 5.2.2 <carol@example.org>: Mailbox full") == .soft)
        #expect(kind("5.2.0", "550 5.2.0 Mailbox quota exceeded") == .soft)
        #expect(kind("5.2.1", "550 5.2.1 Mailbox disabled, not accepting messages") == .hard)
        #expect(kind("5.1.1", "550 5.1.1 <carol@example.org>: Recipient address rejected: User unknown") == .hard)
        #expect(kind("5.1.10", "550 5.1.10 RESOLVER.ADR.RecipientNotFound") == .hard)
        // Failures that say nothing about the address: our IP blocklisted, DMARC, size, routing.
        #expect(kind("5.7.1", "550 5.7.1 Service unavailable; client host blocked using Spamhaus") == .soft)
        #expect(kind("5.7.26", "550 5.7.26 Unauthenticated email is not accepted") == .soft)
        #expect(kind("5.3.4", "552 5.3.4 Message size exceeds fixed limit") == .soft)
        #expect(kind("5.4.4", "550 5.4.4 Unable to route") == .soft)
    }

    @Test func dsnWhoseRecipientsWereOnlyDelayedOrDeliveredIsNothingToActOn() {
        for action in ["delayed", "delivered", "relayed", "expanded"] {
            // The notification's text alone would read as a hard bounce: the report part decides.
            let perRecipient = "Final-Recipient: rfc822; dan@example.com\nAction: \(action)\nStatus: 4.4.1"
            let message = postfixDSN(to: "x@herald.test", recipient: "dan@example.com", perRecipient: perRecipient)
            #expect(BounceParser.parse(message) == nil, "\(action)")
        }
    }

    // MARK: ARF

    static func arf(feedback: String, returnedPart: String) -> [UInt8] {
        crlfMessage(
            """
            From: <abusedesk@example.com>
            Date: Thu, 8 Mar 2005 17:40:36 EDT
            Subject: FW: Earn money
            To: <abuse@example.net>
            MIME-Version: 1.0
            Content-Type: multipart/report; report-type=feedback-report;
                 boundary="part1_13d.2e68ed54_boundary"

            --part1_13d.2e68ed54_boundary
            Content-Type: text/plain; charset="US-ASCII"
            Content-Transfer-Encoding: 7bit

            This is an email abuse report for an email message received from IP
            192.0.2.1 on Thu, 8 Mar 2005 14:00:00 EDT.  For more information
            about this format please see http://www.mipassoc.org/arf/.

            --part1_13d.2e68ed54_boundary
            Content-Type: message/feedback-report

            \(feedback)

            --part1_13d.2e68ed54_boundary
            \(returnedPart)
            --part1_13d.2e68ed54_boundary--
            """)
    }

    /// RFC 5965 Appendix B.2, including its returned message's stray empty line.
    static let rfc5965Example = arf(
        feedback: """
            Feedback-Type: abuse
            User-Agent: SomeGenerator/1.0
            Version: 1
            Original-Mail-From: <somespammer@example.net>
            Original-Rcpt-To: <user@example.com>
            Arrival-Date: Thu, 8 Mar 2005 14:00:00 EDT
            Reporting-MTA: dns; mail.example.com
            Source-IP: 192.0.2.1
            Authentication-Results: mail.example.com;
                           spf=fail smtp.mail=somespammer@example.com
            Reported-Domain: example.net
            Reported-Uri: http://example.net/earn_money.html
            Reported-Uri: mailto:user@example.com
            Removal-Recipient: user@example.com
            """,
        returnedPart: """
            Content-Type: message/rfc822
            Content-Disposition: inline

            From: <somespammer@example.net>
            Received: from mailserver.example.net (mailserver.example.net
                    [192.0.2.1]) by example.com with ESMTP id M63d4137594e46;
                    Thu, 08 Mar 2005 14:00:00 -0400

            To: <Undisclosed Recipients>
            Subject: Earn money
            MIME-Version: 1.0
            Content-type: text/plain
            Message-ID: 8787KJKJ3K4J3K4J3K4J3.mail@example.net
            Date: Thu, 02 Sep 2004 12:31:03 -0500

            Spam Spam Spam
            Spam Spam Spam
            """)

    @Test func rfc5965ExampleIsAComplaintAboutItsOriginalRecipient() {
        #expect(
            BounceParser.parse(Self.rfc5965Example)
                == BounceReport(
                    kind: .complaint, format: .arf, recipient: "user@example.com",
                    diagnostic: "Feedback-Type: abuse; User-Agent: SomeGenerator/1.0"))
    }

    @Test func arfOtherThanAbuseIsNothingToActOn() {
        // not-spam, DMARC failure reports (RFC 6591 auth-failure), and reports about the message rather than a
        // recipient's wish for mail.
        for type in ["not-spam", "auth-failure", "fraud", "virus", "other"] {
            let message = Self.arf(
                feedback: "Feedback-Type: \(type)\nUser-Agent: SomeGenerator/1.0\nVersion: 1",
                returnedPart: "Content-Type: text/rfc822-headers\n\nTo: user@example.com\n")
            #expect(BounceParser.parse(message) == nil, "\(type)")
        }
    }

    @Test func arfWithoutOriginalRcptToNamesTheReturnedMessagesRecipient() {
        let message = Self.arf(
            feedback: "feedback-type: Abuse\nversion: 1",
            returnedPart: "Content-Type: text/rfc822-headers\n\nFrom: Herald <noreply@herald.test>\nTo: \"Jack\" <Jack@Example.com>\n")
        #expect(
            BounceParser.parse(message)
                == BounceReport(kind: .complaint, format: .arf, recipient: "jack@example.com", diagnostic: "Feedback-Type: abuse"))
    }

    // MARK: Non-standard bounces

    @Test func eximBounceIsHardWithItsFailedRecipient() {
        let message = crlfMessage(
            """
            Return-path: <>
            Envelope-to: \(verp.address(for: 42))
            Received: from Debian-exim by mail.example.com with local (Exim 4.96)
                id 1uABCD-000123-Xy
                for \(verp.address(for: 42)); Mon, 12 May 2025 10:00:02 +0000
            Auto-Submitted: auto-replied
            From: Mail Delivery System <Mailer-Daemon@mail.example.com>
            To: \(verp.address(for: 42))
            Subject: Mail delivery failed: returning message to sender
            Message-Id: <E1uABCD-000123-Xy@mail.example.com>
            Date: Mon, 12 May 2025 10:00:02 +0000

            This message was created automatically by mail delivery software.

            A message that you sent could not be delivered to one or more of its
            recipients. This is a permanent error. The following address(es) failed:

              Erin@example.com
                host mx.example.com [192.0.2.30]
                SMTP error from remote mail server after RCPT TO:<Erin@example.com>:
                550 5.1.1 <Erin@example.com>: Recipient address rejected: User unknown

            ------ This is a copy of the message, including all the headers. ------

            Return-path: <\(verp.address(for: 42))>
            To: Erin@example.com
            Subject: Your order 4.2.2 shipped

            Call 452 1234 today.
            """)
        #expect(
            BounceParser.parse(message)
                == BounceReport(
                    kind: .hard, format: .heuristic, status: "5.1.1", recipient: "erin@example.com",
                    diagnostic: "550 5.1.1 <Erin@example.com>: Recipient address rejected: User unknown"))
        #expect(verp.outboxIDs(in: message) == [42])
    }

    @Test func qmailBounceIsHardWithTheRecipientFromItsText() {
        let message = crlfMessage(
            """
            Return-Path: <>
            Date: 12 May 2025 10:00:03 -0000
            From: MAILER-DAEMON@mail.example.net
            To: \(verp.address(for: 42))
            Subject: failure notice

            Hi. This is the qmail-send program at mail.example.net.
            I'm afraid I wasn't able to deliver your message to the following addresses.
            This is a permanent error; I've given up. Sorry it didn't work out.

            <frank@example.net>:
            Sorry, no mailbox here by that name. (#5.1.1)

            --- Below this line is a copy of the message.

            Return-Path: <\(verp.address(for: 42))>
            To: frank@example.net
            """)
        #expect(
            BounceParser.parse(message)
                == BounceReport(
                    kind: .hard, format: .heuristic, status: "5.1.1", recipient: "frank@example.net",
                    diagnostic: "Sorry, no mailbox here by that name. (#5.1.1)"))
    }

    @Test func qmailBounceWithAFullMailboxIsSoft() {
        let message = crlfMessage(
            """
            From: MAILER-DAEMON@mail.example.net
            Subject: failure notice

            Hi. This is the qmail-send program at mail.example.net.
            I'm afraid I wasn't able to deliver your message to the following addresses.

            <gina@example.net>:
            192.0.2.40 does not like recipient.
            Remote host said: 552 sorry, mailbox full
            Giving up on 192.0.2.40.
            """)
        let report = BounceParser.parse(message)
        #expect(report?.kind == .soft && report?.status == nil && report?.recipient == "gina@example.net")
        #expect(report?.diagnostic == "Remote host said: 552 sorry, mailbox full")
    }

    @Test func exchangeNonDeliveryReportIsHardWithItsRecipient() {
        let message = crlfMessage(
            """
            From: postmaster@contoso.example
            To: \(verp.address(for: 42))
            Subject: =?utf-8?Q?Undeliverable:_Confirm_your_email?=
            Content-Type: multipart/mixed; boundary="_000_outer_"

            --_000_outer_
            Content-Type: multipart/alternative; boundary="_001_inner_"

            --_001_inner_
            Content-Type: text/plain; charset="us-ascii"
            Content-Transfer-Encoding: quoted-printable

            Delivery has failed to these recipients or groups:

            henry@contoso.example<mailto:henry@contoso.example>
            The email address you entered couldn't be found. Please check the recipient=
            's email address and try to resend the message.

            Diagnostic information for administrators:

            Remote Server returned '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient=
             not found by SMTP address lookup'

            Original message headers:

            Subject: Confirm your email 5.7.1
            --_001_inner_
            Content-Type: text/html; charset="us-ascii"

            <p>Delivery has failed to these recipients or groups:</p>
            --_001_inner_--

            --_000_outer_
            Content-Type: message/rfc822

            To: henry@contoso.example
            Subject: Confirm your email

            --_000_outer_--
            """)
        let report = BounceParser.parse(message)
        #expect(report?.kind == .hard && report?.format == .heuristic && report?.status == "5.1.10")
        #expect(report?.recipient == "henry@contoso.example")
        #expect(report?.diagnostic.hasPrefix("Remote Server returned '550 5.1.10 RESOLVER.ADR.RecipientNotFound;") == true)
    }

    @Test func googleFailureNoticeWithoutReportPartsIsHard() {
        let message = crlfMessage(
            """
            From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>
            To: \(verp.address(for: 42))
            Subject: Delivery Status Notification (Failure)
            Content-Type: text/plain; charset=UTF-8

            Delivery to the following recipient failed permanently:

                 ivy@example.com

            Technical details of permanent failure:
            Google tried to deliver your message, but it was rejected by the server for the recipient domain example.com by mx.example.com. [192.0.2.50].

            The error that the other server returned was:
            550-5.1.1 The email account that you tried to reach does not exist. Please try
            550 5.1.1 double-checking the recipient's email address for typos.
            """)
        let report = BounceParser.parse(message)
        #expect(report?.kind == .hard && report?.status == "5.1.1" && report?.recipient == "ivy@example.com")
    }

    @Test func bounceLookingMessageWithoutCodesIsClassifiedByPhrasesElseSoft() {
        func parse(_ body: String) -> BounceReport? {
            BounceParser.parse(crlfMessage("From: MAILER-DAEMON@mx.example.com\nSubject: Returned mail\n\n\(body)\n"))
        }
        #expect(parse("The user kim@example.com does not exist here.")?.kind == .hard)
        #expect(parse("kim@example.com: mailbox is full, try again later")?.kind == .soft)
        let undecided = parse("Your message to kim@example.com was returned.")
        #expect(undecided?.kind == .soft && undecided?.recipient == "kim@example.com")
    }

    // MARK: Nothing to act on

    @Test func outOfOfficeAutoReplyIsNothingToActOn() {
        let message = crlfMessage(
            """
            From: Ada Lovelace <ada@example.com>
            To: \(verp.address(for: 42))
            Subject: Out of Office: Confirm your email
            Auto-Submitted: auto-replied
            X-Autoreply: yes

            I am out of the office until Monday and temporarily without email. Messages
            could not be delivered to my assistant, so please try again later.
            """)
        #expect(BounceParser.parse(message) == nil)
        let precedence = crlfMessage("From: ada@example.com\nSubject: Re: Confirm your email\nPrecedence: auto_reply\n\nThanks, I'll read it soon.\n")
        #expect(BounceParser.parse(precedence) == nil)
    }

    @Test func ordinaryMessageIsNothingToActOn() {
        let message = crlfMessage("From: ada@example.com\nSubject: Hello\n\nCall me at 550 1234, or see RFC 5.1.1.\n")
        #expect(BounceParser.parse(message) == nil)
    }

    @Test func garbageEmptyTruncatedAndHugeInputIsNilWithoutCrashing() {
        var generator = SplitMix64(seed: 1)
        let garbage = (0..<200_000).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        #expect(BounceParser.parse(garbage) == nil)
        #expect(BounceParser.parse([]) == nil)
        #expect(BounceParser.parse(Array("\r\n\r\n".utf8)) == nil)
        #expect(BounceParser.parse(Array("Content-Type: multipart/report; boundary=".utf8)) == nil)

        let full = crlfMessage(Self.rfc3464MultiRecipient)
        for length in stride(from: 0, to: full.count, by: 37) {
            _ = BounceParser.parse(Array(full.prefix(length)))
            _ = verp.outboxIDs(in: Array(full.prefix(length)))
        }

        var nested: [UInt8] = []
        for _ in 0..<2_000 { nested += crlfMessage("Content-Type: multipart/mixed; boundary=a\n\n--a\n") }
        #expect(BounceParser.parse(nested) == nil)

        let huge = crlfMessage("From: ada@example.com\nSubject: Hi\n\n") + [UInt8](repeating: UInt8(ascii: "5"), count: 6 << 20)
        #expect(BounceParser.parse(huge) == nil)
        #expect(verp.outboxIDs(in: huge).isEmpty)
    }
}
